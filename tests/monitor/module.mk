# tests/monitor/: the exporter end to end. test_serve.sh: spillway-top
# --serve's HTTP answers, then serve_fuzz.py (10,000 malformed requests,
# 200 concurrent connections, slow clients, memory). test_prometheus.sh:
# Debian's Prometheus (installed when missing, else skipped with the
# reason) scrapes a program under spillway on fakecuda, directly and
# through node_exporter's textfile collector.
UNIT_TESTS += tests/monitor/test_serve.sh tests/monitor/test_prometheus.sh
