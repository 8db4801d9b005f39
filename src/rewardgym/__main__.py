import sys

from rewardgym.cli.main import main

sys.exit(main())
