"""The first home of ``focuscrawl.rendering.splash.compat``, kept as a name of it: projects' settings
name its middlewares (``focuscrawl.rendering.splash_compat.SplashMiddleware``) and import
``install`` and ``SplashRequest`` from here. Importing this module gives that one."""

import sys

from focuscrawl.rendering.splash import compat

sys.modules[__name__] = compat
