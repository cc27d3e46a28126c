#!/bin/bash
# Builds /testbed for the project's own "mini" Bash tasks (envs/bash/mini.json).
# Run with bash at image build time. Deterministic: fixed contents and fixed mtimes.
set -euo pipefail

rm -rf /testbed
mkdir -p /testbed/notes /testbed/logs/archive /testbed/data /testbed/scripts /testbed/empty

cat > /testbed/notes/todo.txt <<'TXT'
buy coffee beans
water the ferns
renew library card
fix the bike light
TXT

cat > /testbed/notes/poem.txt <<'TXT'
the river bends where the willows lean
a heron waits in the morning green
the river keeps what the rain has seen
TXT

cat > /testbed/logs/app.log <<'TXT'
2024-03-01 08:00:01 INFO server started on port 8080
2024-03-01 08:00:05 INFO worker 1 ready
2024-03-01 08:01:12 WARN slow response from cache (812 ms)
2024-03-01 08:02:40 ERROR failed to open /var/data/report.csv
2024-03-01 08:03:00 INFO worker 2 ready
2024-03-01 08:04:18 ERROR timeout talking to billing service
2024-03-01 08:05:55 INFO request served in 14 ms
TXT

cat > /testbed/logs/archive/app-2024-02.log <<'TXT'
2024-02-28 23:59:58 INFO nightly backup finished
2024-02-29 00:00:03 ERROR disk quota at 97 percent
TXT

cat > /testbed/data/fruits.csv <<'TXT'
name,color,price
apple,red,0.50
banana,yellow,0.25
cherry,red,3.10
kiwi,green,0.40
lemon,yellow,0.35
TXT

cat > /testbed/data/cities.csv <<'TXT'
city,country,population
Lyon,France,522000
Porto,Portugal,232000
Graz,Austria,291000
Turku,Finland,195000
TXT

cat > /testbed/scripts/hello.sh <<'TXT'
#!/bin/bash
echo "hello from the mini testbed"
TXT
chmod +x /testbed/scripts/hello.sh

cat > /testbed/scripts/sum.py <<'TXT'
#!/usr/bin/env python3
import sys

print(sum(int(x) for x in sys.argv[1:]))
TXT
chmod +x /testbed/scripts/sum.py

# Fixed timestamps so answers that list or sort by time never depend on build time.
find /testbed -exec touch -h -d "2024-03-01 12:00:00" {} +
