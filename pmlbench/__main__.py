import sys

from pmlbench.cli.main import main

sys.exit(main())
