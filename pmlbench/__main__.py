import sys

from pmlbench.cli import main

sys.exit(main())
