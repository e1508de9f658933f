import sys

from clinigym.cli.main import main

sys.exit(main())
