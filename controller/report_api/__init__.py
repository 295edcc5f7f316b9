"""The report API, a part of the spoke's process (`addon-status run`): the HTTPS server the
endpoint operator and the collectors report to, its authentication and authorization, its
serving certificate, and the flags that describe it. The collector side is `controller.reporter`."""
