import sys

from biossd.entry import main

sys.exit(main())
