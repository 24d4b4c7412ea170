from convarch.cli import main

main()
