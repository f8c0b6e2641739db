import sys

from wincon.cli import main

sys.exit(main())
