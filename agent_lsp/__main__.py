from agent_lsp.cli import main

raise SystemExit(main())
