from consort.cli.main import main

main()
