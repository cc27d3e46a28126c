// The report's episode explorer, episode view and run-vs-run comparison.
// Reads the JSON of the element #report-data, renders only the rows in view, parses an episode's
// details when it is opened, and puts record text into the page as text only (never as markup).
// The state lives in the address's #fragment, so a view can be linked to and reloaded.
(function () {
  "use strict";
  const data = JSON.parse(document.getElementById("report-data").textContent);
  for (const run of data.runs) run.epochs = run.rows.some((row) => row[1] > 1); // show epoch numbers
  const ROW = 26; // px per list row
  const EXTRA = 8; // rows rendered beyond the visible ones
  const state = { run: 0, outcome: "", tag: "", group: "", q: "", episode: null, a: 0, b: 1 };
  const tagBit = (name) => 1 << data.tags.indexOf(name);

  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(props || {})) {
      if (key === "class") node.className = value;
      else if (key === "text") node.textContent = value;
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value);
    }
    for (const child of children) if (child != null) node.append(child);
    return node;
  }
  const fmt = {
    reward: (r) => (r == null ? "n/a" : r.toFixed(2)),
    cost: (c) => (c == null ? "n/a" : c === 0 ? "$0" : "$" + c.toFixed(c >= 0.01 ? 4 : 6)),
    int: (n) => n.toLocaleString("en-US"),
  };
  const outcomeOf = (row) => data.outcomes[row[2]];
  const tagsOf = (row) => data.tags.filter((t, i) => row[5] & (1 << i));

  // -- the address ----------------------------------------------------------------------------
  function readHash() {
    const params = new URLSearchParams(location.hash.slice(1));
    for (const key of ["outcome", "tag", "group", "q"]) state[key] = params.get(key) || "";
    for (const key of ["run", "a", "b"]) {
      const n = Number(params.get(key));
      if (params.has(key) && Number.isInteger(n) && n >= 0 && n < data.runs.length) state[key] = n;
    }
    // open=RUN:EPOCH:TASK names an episode by its run, epoch and task id, so links survive a new report
    const open = (params.get("open") || "").match(/^(\d+):(\d+):(.+)$/);
    state.episode = null;
    if (open && Number(open[1]) < data.runs.length) {
      const run = Number(open[1]);
      const index = data.runs[run].rows.findIndex((row) => row[1] === Number(open[2]) && row[0] === open[3]);
      if (index >= 0) state.episode = [run, index];
    }
  }
  function writeHash() {
    const params = new URLSearchParams();
    for (const key of ["run", "outcome", "tag", "group", "q", "a", "b"]) {
      if (state[key] !== "" && state[key] != null) params.set(key, String(state[key]));
    }
    if (state.episode) {
      const [run, index] = state.episode;
      const row = data.runs[run].rows[index];
      params.set("open", `${run}:${row[1]}:${row[0]}`);
    }
    history.replaceState(null, "", "#" + params.toString());
  }

  // -- a list that renders only what is in view --------------------------------------------------
  function virtualList(container, renderRow) {
    const spacer = el("div", { class: "spacer" });
    container.append(spacer);
    let items = [];
    function draw() {
      const first = Math.max(0, Math.floor(container.scrollTop / ROW) - EXTRA);
      const count = Math.ceil(container.clientHeight / ROW) + 2 * EXTRA;
      const last = Math.min(items.length, first + count);
      spacer.replaceChildren();
      spacer.style.height = items.length * ROW + "px";
      for (let i = first; i < last; i++) {
        const row = renderRow(items[i], i);
        row.style.top = i * ROW + "px";
        row.classList.add("vrow");
        spacer.append(row);
      }
    }
    container.addEventListener("scroll", () => requestAnimationFrame(draw));
    return {
      set(newItems) {
        items = newItems;
        container.scrollTop = 0;
        draw();
      },
      draw,
    };
  }

  // -- the explorer ------------------------------------------------------------------------------
  const root = document.getElementById("explorer");
  const controls = el("div", { class: "controls" });
  const counter = el("span", { class: "count", id: "episode-count" });
  const listBox = el("div", { class: "list", id: "episode-list" });
  const view = el("div", { class: "episode", id: "episode-view" });
  root.append(controls, counter, listBox, view);

  function select(id, label, options, key) {
    const node = el("select", { id, onchange: () => { state[key] = node.value; state.episode = null; refresh(); } });
    for (const [value, text] of options) node.append(el("option", { value, text }));
    controls.append(el("label", { text: label + " " }, node));
    return node;
  }
  const runSelect = data.runs.length > 1
    ? select("f-run", "Run", data.runs.map((r, i) => [String(i), r.label]), "run") : null;
  const outcomeSelect = select("f-outcome", "Outcome", [["", "any"], ...data.outcomes.map((o) => [o, o])], "outcome");
  const tagSelect = select("f-tag", "Tag", [["", "any"], ...data.tags.map((t) => [t, t])], "tag");
  const groupSelect = select("f-group", "Group", [["", "any"], ...data.groups.map((g) => [g, g])], "group");
  const search = el("input", { id: "f-q", type: "search", placeholder: "task id contains" });
  search.addEventListener("input", () => { state.q = search.value; refresh(); });
  controls.append(search);

  function matching() {
    const run = data.runs[state.run];
    const outcome = state.outcome ? data.outcomes.indexOf(state.outcome) : -1;
    const bit = state.tag ? tagBit(state.tag) : 0;
    const group = state.group ? data.groups.indexOf(state.group) : -1;
    const q = state.q.toLowerCase();
    const found = [];
    run.rows.forEach((row, i) => {
      if (outcome >= 0 && row[2] !== outcome) return;
      if (bit && !(row[5] & bit)) return;
      if (group >= 0 && !row[6].includes(group)) return;
      if (q && !row[0].toLowerCase().includes(q)) return;
      found.push(i);
    });
    return found;
  }

  function rowView(runIndex, i, note) {
    const row = data.runs[runIndex].rows[i];
    const outcome = outcomeOf(row);
    const node = el(
      "div",
      { class: "erow " + outcome, "data-index": String(i), onclick: () => open(runIndex, i) },
      el("span", { class: "task", text: row[0] + (data.runs[runIndex].epochs ? " #" + row[1] : "") }),
      el("span", { class: "badge " + outcome, text: outcome }),
      el("span", { class: "num", text: "reward " + fmt.reward(row[3]) }),
      el("span", { class: "num", text: row[4] + " turns" }),
      el("span", { class: "num", text: fmt.int(row[7]) + " tok" }),
      el("span", { class: "num", text: fmt.cost(row[8]) }),
      el("span", { class: "tags", text: note || tagsOf(row).join(", ") }),
    );
    if (state.episode && state.episode[0] === runIndex && state.episode[1] === i) node.classList.add("current");
    return node;
  }

  let shown = [];
  const list = virtualList(listBox, (i) => rowView(state.run, i));
  function refresh() {
    if (runSelect) runSelect.value = String(state.run);
    outcomeSelect.value = state.outcome;
    tagSelect.value = state.tag;
    groupSelect.value = state.group;
    search.value = state.q;
    shown = matching();
    counter.textContent = `Showing ${fmt.int(shown.length)} of ${fmt.int(data.runs[state.run].rows.length)} episodes`;
    list.set(shown);
    showEpisode();
    writeHash();
  }

  // -- one episode ---------------------------------------------------------------------------------
  function open(runIndex, i) {
    state.episode = [runIndex, i];
    showEpisode();
    list.draw();
    writeHash();
    view.scrollIntoView({ block: "nearest" });
  }

  function field(name, value) {
    return el("div", { class: "field" }, el("span", { class: "name", text: name }), el("span", { text: value }));
  }
  function pre(cls, text) {
    return el("pre", { class: cls, text: text == null || text === "" ? "(nothing)" : text });
  }

  function showEpisode() {
    view.replaceChildren();
    if (!state.episode) {
      view.append(el("p", { class: "note", text: "Click an episode to read its steps." }));
      return;
    }
    const [runIndex, i] = state.episode;
    const run = data.runs[runIndex];
    const d = JSON.parse(run.details[i]);
    const at = shown.indexOf(i);
    const nav = el("div", { class: "nav" });
    if (runIndex === state.run && at > 0) nav.append(el("button", { text: "◀ previous", onclick: () => open(runIndex, shown[at - 1]) }));
    if (runIndex === state.run && at >= 0 && at < shown.length - 1) nav.append(el("button", { text: "next ▶", onclick: () => open(runIndex, shown[at + 1]) }));
    nav.append(el("button", { text: "close", onclick: () => { state.episode = null; showEpisode(); list.draw(); writeHash(); } }));
    view.append(
      el("h3", { text: `${d.task} · epoch ${d.epoch} · ${run.label}` }),
      nav,
      el(
        "div",
        { class: "fields" },
        field("outcome", d.outcome + (d.excluded ? ` (excluded: ${d.excluded})` : "")),
        field("reward", fmt.reward(d.reward)),
        field("tags", d.tags.length ? d.tags.join(", ") : "none"),
        field("tokens in / out", `${fmt.int(d.tokens[0])} / ${fmt.int(d.tokens[1])}`),
        field("cost", fmt.cost(d.cost)),
        field("seed", String(d.seed)),
        field("seconds", String(d.duration)),
        field("attempts", String(d.attempts)),
        field("strategy · model", `${d.strategy} · ${d.model}`),
        field("group", Object.entries(d.group).map(([k, v]) => `${k}=${v}`).join(", ") || "none"),
      ),
    );
    if (d.error) view.append(el("p", { class: "error", text: "error: " + d.error }));
    view.append(el("h4", { text: "Question" }), pre("question", d.question));
    const parts = Object.entries(d.parts || {});
    if (parts.length) {
      const table = el("table", { class: "parts" });
      for (const [k, v] of parts) table.append(el("tr", {}, el("td", { text: k }), el("td", { text: JSON.stringify(v) })));
      view.append(el("h4", { text: "Reward parts" }), table);
    }
    view.append(el("h4", { text: `Steps (${d.steps.length})` }));
    d.steps.forEach((s, n) => {
      const flags = [];
      if (s.exit_code != null) flags.push("exit code " + s.exit_code);
      if (s.errored) flags.push("errored");
      if (s.timed_out) flags.push("timed out");
      if (s.cut) flags.push("output cut");
      if (s.reward != null) flags.push("reward " + fmt.reward(s.reward));
      if (s.tokens[0] || s.tokens[1]) flags.push(`tokens ${fmt.int(s.tokens[0])} / ${fmt.int(s.tokens[1])}`);
      const step = el(
        "div",
        { class: "step " + s.kind },
        el("div", { class: "step-head", text: `${n + 1}. turn ${s.turn} · ${s.kind}` + (flags.length ? " · " + flags.join(" · ") : "") }),
      );
      if (s.thought) step.append(el("div", { class: "label", text: "thought" }), pre("thought", s.thought));
      if (s.action) step.append(el("div", { class: "label", text: "action" }), pre("action", s.action));
      if (s.kind !== "message" || s.observation) step.append(el("div", { class: "label", text: "observation" }), pre("observation", s.observation));
      view.append(step);
    });
    if (d.retries.length) {
      view.append(el("h4", { text: "Earlier attempts (retried)" }));
      for (const r of d.retries) view.append(el("p", { text: `${r.outcome}: ${r.error || ""}` }));
    }
  }

  // -- two runs, episode by episode -----------------------------------------------------------------
  function compareSection() {
    const box = document.getElementById("compare");
    if (!box || data.runs.length < 2) return;
    const pick = el("div", { class: "controls" });
    const summary = el("p", { id: "compare-summary" });
    const flipBox = el("div", { class: "list short", id: "flip-list" });
    box.append(pick, summary, flipBox);
    const options = data.runs.map((r, i) => [String(i), r.label]);
    function runPicker(id, label, key) {
      const node = el("select", { id, onchange: () => { state[key] = Number(node.value); draw(); writeHash(); } });
      for (const [value, text] of options) node.append(el("option", { value, text }));
      pick.append(el("label", { text: label + " " }, node));
      return node;
    }
    const pickA = runPicker("c-a", "Run A", "a");
    const pickB = runPicker("c-b", "Run B", "b");
    let flips = [];
    const flipList = virtualList(flipBox, (flip) => {
      const [direction, runIndex, i] = flip;
      return rowView(runIndex, i, direction === "gained" ? "solved only in B" : "solved only in A");
    });
    function keyed(run) {
      const map = new Map();
      run.rows.forEach((row, i) => map.set(row[9] + "\u0000" + row[0] + "\u0000" + row[1], i));
      return map;
    }
    function draw() {
      pickA.value = String(state.a);
      pickB.value = String(state.b);
      const A = data.runs[state.a], B = data.runs[state.b];
      const inB = keyed(B);
      const excluded = tagBit("excluded");
      const solved = data.outcomes.indexOf("solved");
      let both = 0, neither = 0, gained = 0, lost = 0, other = 0, matched = 0;
      flips = [];
      A.rows.forEach((row, i) => {
        const j = inB.get(row[9] + "\u0000" + row[0] + "\u0000" + row[1]);
        if (j !== undefined) matched++;
        if (j === undefined || (row[5] & excluded) || (B.rows[j][5] & excluded)) { other++; return; }
        const a = row[2] === solved, b = B.rows[j][2] === solved;
        if (a && b) both++;
        else if (!a && !b) neither++;
        else if (b) { gained++; flips.push(["gained", state.b, j]); }
        else { lost++; flips.push(["lost", state.a, i]); }
      });
      other += B.rows.length - matched; // episodes only B has
      summary.textContent =
        `${gained} solved only in B, ${lost} solved only in A (flipped: ${gained + lost}); ` +
        `${both} solved in both, ${neither} in neither; ${other} not comparable (missing or excluded).`;
      summary.dataset.gained = String(gained);
      summary.dataset.lost = String(lost);
      flipList.set(flips);
    }
    draw();
  }

  readHash();
  refresh();
  compareSection();
  window.addEventListener("hashchange", () => { readHash(); refresh(); });
  document.body.dataset.ready = "1";
})();
