#!/bin/bash
# Build step of the SQL image: initialise the data directory with this image's settings, load
# every dump in /tmp/dumps (in name order), create the read-only role and account, shut down.
set -euo pipefail

rm -rf /var/lib/mysql/*
mariadb-install-db --user=mysql --datadir=/var/lib/mysql --skip-test-db \
    --auth-root-authentication-method=socket > /dev/null

mariadbd --user=mysql &
server_pid=$!
for _ in $(seq 120); do
    mariadb-admin ping --silent 2> /dev/null && break
    sleep 0.5
done
mariadb-admin ping --silent

for dump in /tmp/dumps/*.sql; do
    echo "loading ${dump##*/}"
    mariadb < "$dump"
    # The InterCode dumps create an all-powerful 'admin'@'%' account; the sandbox does not keep it.
    mariadb -e "DROP USER IF EXISTS 'admin'@'%'"
done

# Persistent statistics, computed now: without them InnoDB computes them on a table's first use and
# a query's plan (and so the order of rows tied under ORDER BY) can differ between its first run and
# later ones, which would make the agent's and the gold's result sets disagree.
mariadb-check --analyze --all-databases --silent

# The role every reading account gets: SELECT and SHOW VIEW on each task database, SHOW DATABASES;
# nothing else (no writes, no temporary tables, no PROCESS, no access to the system schemas). The env
# creates one account per episode worker with this role only, as `mysql` (docker/helpers/sqladmin.py,
# which may grant the role but never uses it); `agent` is the account of a helper started by hand.
mariadb <<'SQL'
CREATE ROLE intercode_reader;
GRANT SHOW DATABASES ON *.* TO intercode_reader;
GRANT intercode_reader TO 'mysql'@'localhost' WITH ADMIN OPTION;
CREATE USER 'agent'@'localhost' IDENTIFIED BY '';
GRANT intercode_reader TO 'agent'@'localhost';
SET DEFAULT ROLE intercode_reader FOR 'agent'@'localhost';
SQL
mariadb -N -e "SELECT schema_name FROM information_schema.schemata
               WHERE schema_name NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys')" \
    | while read -r db; do
        mariadb -e "GRANT SELECT, SHOW VIEW ON \`${db}\`.* TO intercode_reader"
    done
mariadb -e "FLUSH PRIVILEGES; SET GLOBAL innodb_fast_shutdown = 0"
mariadb -N -e "SELECT CONCAT(COUNT(*), ' databases loaded') FROM information_schema.schemata
               WHERE schema_name NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys')"

mariadb-admin shutdown
wait "$server_pid"
