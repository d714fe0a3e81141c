from django.db import models  # noqa: F401  (models arrive with the Web I issue)
