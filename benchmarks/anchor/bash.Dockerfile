# The original InterCode's Bash image (intercode-bench 0.1.22, intercode/assets/docker/bash.Dockerfile)
# on the project's Debian base instead of alpine:latest, which no registry here can give: git, the
# package's own setup_fs.sh and docker.gitignore, and the git repository of / its reset and status use.
ARG BASE
FROM ${BASE}

RUN apt-get update && apt-get install -y --no-install-recommends git \
    && apt-get clean && rm -rf /var/lib/apt/lists/*

COPY ./setup_fs.sh /
# Alpine's sh reads `echo -e` as bash does; Debian's dash would write the "-e" into the files.
RUN chmod +x /setup_fs.sh && bash /setup_fs.sh

COPY ./docker.gitignore /
RUN mv docker.gitignore .gitignore
RUN git config --global user.email "intercode@pnlp.org"
RUN git config --global user.name "intercode"
RUN git init
RUN git add -A
RUN git commit -m 'initial commit'

WORKDIR /
# alpine's command: the original runs its containers with a TTY, so the shell waits for ever.
CMD ["/bin/sh"]
