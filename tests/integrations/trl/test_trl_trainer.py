"""TRL's own GRPO trainer runs one step over a Bash environment of ours, on the CPU, with no weights to
download: a one-layer Qwen3 with random weights and a byte-level tokenizer built here, carrying the Qwen3
chat template TRL ships (so TRL knows how to read its tool calls). The policy is scripted: its forward
pass forces the next token of a fixed reply (call ``run_bash`` with the task's gold command, then call
``submit``), so the trainer's own code does everything else: it probes the factory's instance for its
tools and its ``get_reward``, resets pooled instances with the dataset rows, parses the replies into tool
calls, runs them, feeds their output back, and asks for the reward. The step's loss is of no interest."""

from __future__ import annotations

import json
import os
from importlib.resources import files
from pathlib import Path
from typing import Any

import docker
import pytest

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # environment_factory is marked experimental

datasets = pytest.importorskip("datasets")
torch = pytest.importorskip("torch")
trl = pytest.importorskip("trl")
from tokenizers import Tokenizer, decoders, models, pre_tokenizers  # noqa: E402
from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM  # noqa: E402

from intercode_agents.datasets import get_task  # noqa: E402
from intercode_agents.integrations.trl import BashEnvironment, environment_factory  # noqa: E402

SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>"]
SPECIAL += ["<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>"]


def byte_tokenizer() -> PreTrainedTokenizerFast:
    """One token per byte, plus the chat template's markers as single tokens."""
    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    core = Tokenizer(models.BPE(vocab={char: i for i, char in enumerate(alphabet)}, merges=[]))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    core.decoder = decoders.ByteLevel()
    core.add_special_tokens(SPECIAL)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core, eos_token="<|im_end|>", pad_token="<|endoftext|>"
    )
    tokenizer.chat_template = (files("trl") / "chat_templates" / "qwen3.jinja").read_text()
    return tokenizer


def scripted_policy(tokenizer: PreTrainedTokenizerFast, replies: list[list[int]]) -> Qwen3ForCausalLM:
    """A tiny random Qwen3 whose every reply is forced: reply n (n = the tool responses seen so far)."""
    im_start, response = tokenizer.convert_tokens_to_ids(["<|im_start|>", "<tool_response>"])
    header = len(tokenizer("assistant\n").input_ids)

    class Scripted(Qwen3ForCausalLM):
        plan: list[list[int]] = []  # noqa: RUF012  (per generate call: [reply index, tokens written])

        def forward(self, input_ids: Any = None, **kwargs: Any) -> Any:
            out = super().forward(input_ids=input_ids, **kwargs)
            if input_ids.shape[1] > 1:  # a prefill: where each row's reply starts, and which one it is
                self.plan = []
                for ids in input_ids.tolist():
                    start = len(ids) - ids[::-1].index(im_start) + header
                    self.plan.append([ids.count(response), len(ids) - start])
            else:  # one more token decoded in every row
                for row in self.plan:
                    row[1] += 1
            for row, (reply, written) in enumerate(self.plan):
                if reply < len(replies) and 0 <= written < len(replies[reply]):
                    out.logits[row, -1, replies[reply][written]] += 1e4
            return out

    config = Qwen3Config(
        vocab_size=len(tokenizer),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=8,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    return Scripted(config)


def test_trls_grpo_trainer_plays_a_gold_rollout_through_the_tools_and_reads_reward_1(tmp_path: Path) -> None:
    task = get_task("bash/mini/0")
    tokenizer = byte_tokenizer()

    def call(name: str, **arguments: str) -> list[int]:
        text = json.dumps({"name": name, "arguments": arguments})
        return tokenizer(f"<tool_call>\n{text}\n</tool_call><|im_end|>").input_ids

    policy = scripted_policy(tokenizer, [call("run_bash", command=task.gold), call("submit")])
    prompt = [{"role": "system", "content": "Use the tools."}, {"role": "user", "content": "Solve:"}]
    rows = [{"prompt": prompt, "task_id": task.id}]
    args = trl.GRPOConfig(
        output_dir=str(tmp_path),
        per_device_train_batch_size=2,
        num_generations=2,
        max_completion_length=512,
        max_steps=1,
        use_cpu=True,
        report_to=[],
        save_strategy="no",
    )
    trainer = trl.GRPOTrainer(
        model=policy,
        processing_class=tokenizer,
        args=args,
        train_dataset=datasets.Dataset.from_list(rows * 2),
        environment_factory=environment_factory("bash", max_turns=3, record_dir=tmp_path / "records"),
    )
    assert trainer.reward_func_names == ["BashEnvironment"]  # get_reward is the reward; no reward_funcs
    assert sorted(tool.__name__ for tool in trainer._env_tools[None]) == ["run_bash", "submit"]
    pool: list[BashEnvironment] = trainer._environment_pool[None]
    try:
        trainer.train()
        logged = trainer.state.log_history[0]
        assert logged["tools/call_frequency"] == 2.0 and logged["tools/failure_frequency"] == 0.0
        assert logged["rewards/BashEnvironment/mean"] == 1.0
        assert len(pool) == 2  # one instance per rollout of the group, the probe reused
        for env in pool:
            record = env._rollout.trajectory
            assert record.task_id == task.id and record.outcome == "solved" and record.strategy == "trl"
            assert [(step.kind, step.action) for step in record.steps] == [
                ("action", task.gold),
                ("submit", "submit"),
            ]
        (written,) = (tmp_path / "records").glob("trajectories-*.jsonl")
        outcomes = [json.loads(line)["outcome"] for line in written.read_text().splitlines()]
        assert outcomes == ["solved", "solved"]
    finally:
        sandboxes = [env._rollout.env.sandbox.id for env in pool if env._rollout.env is not None]
        for env in pool:
            env._close()
    engine = docker.from_env()
    assert all(not engine.api.containers(all=True, filters={"id": sandbox}) for sandbox in sandboxes)
