# deploy/: recipes for clusters (kubernetes/: images, the exporter
# DaemonSet, a workload, Prometheus; slurm/: a TaskProlog) and the checks
# that need no cluster.
UNIT_TESTS += deploy/test_kubernetes.sh deploy/test_slurm.sh
