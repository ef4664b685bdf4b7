from consort.cli import main

main()
