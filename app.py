from ui.app import main

main()
