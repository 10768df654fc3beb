import sys

from leapp_lab.cli import main

sys.exit(main())
