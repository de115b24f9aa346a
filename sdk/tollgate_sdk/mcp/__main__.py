import sys

from ._server import main

sys.exit(main())
