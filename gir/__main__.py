import sys

from gir.cli import main

sys.exit(main())
