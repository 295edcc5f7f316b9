"""What a collector or the endpoint operator runs to report: `ReportClient` and the `addon-status
report` command. Shipped in the same wheel but loaded apart: neither the Kubernetes client nor the
report API server comes with it."""
