from ale_cli.cli import main

main()
