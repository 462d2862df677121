from cpustudy.cli import main

raise SystemExit(main())
