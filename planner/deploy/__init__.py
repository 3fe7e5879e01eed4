"""The plan's whole fleet as deployment files: Kubernetes manifests, a Compose file or shell scripts, and a
benchmark job whose result ``kvplan calibrate`` reads (docs/deploy.md).  Pure: file contents as text; the CLI
and the dashboard write them."""
