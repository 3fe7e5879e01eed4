"""Launch commands: the ``vllm serve`` / SGLang ``launch_server`` command line that deploys a scenario."""
