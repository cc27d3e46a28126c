# The original InterCode's SQL image (intercode-bench 0.1.22, intercode/assets/docker/sql.Dockerfile and
# sql-docker-compose.yml) on the project's Debian base instead of mysql:latest: a MariaDB server with
# the package's spider_dev.sql loaded (it creates the admin/admin account the original connects as),
# lower_case_table_names=1, on 127.0.0.1:3307. The dump is loaded at build time rather than by the
# mysql image's entrypoint at first start.
ARG BASE
FROM ${BASE}

ARG DEBIAN_FRONTEND=noninteractive
RUN apt-get update && apt-get install -y --no-install-recommends mariadb-server \
    && apt-get clean && rm -rf /var/lib/apt/lists/* && mkdir -p /run/mysqld && chown mysql:mysql /run/mysqld

COPY anchor.cnf /etc/mysql/mariadb.conf.d/99-anchor.cnf
COPY spider_dev.sql /tmp/spider_dev.sql
RUN mariadb-install-db --user=mysql --datadir=/var/lib/mysql --skip-test-db > /dev/null \
    && (mariadbd --user=mysql &) \
    && for _ in $(seq 120); do mariadb-admin ping --silent 2> /dev/null && break; sleep 0.5; done \
    && mariadb < /tmp/spider_dev.sql && rm /tmp/spider_dev.sql \
    && mariadb-admin shutdown

CMD ["mariadbd", "--user=mysql"]
