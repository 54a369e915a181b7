from nocturne_desktop.cli import main

raise SystemExit(main())
