"""A run's feedback on its pull request (`python -m pytest_kernelperf github`): the REST client
(client.py), the pull request a workflow runs for (context.py), the comment and the check run
(publish.py), the command line (cli.py). What they say is rendered in results/pull_request.py."""
