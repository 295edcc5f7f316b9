"""`addon-status check`: a preflight and a diagnosis, on a spoke (in the controller's pod) and
on a hub, in the spirit of `flux check`."""
