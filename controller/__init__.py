"""The shell of the addon status controller: Kubernetes API, report API, hub replication,
metrics and the command line."""
