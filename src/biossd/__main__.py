import sys

from biossd.cli import main

sys.exit(main())
