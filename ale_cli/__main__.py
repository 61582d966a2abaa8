from ale_cli.entry import main

main()
