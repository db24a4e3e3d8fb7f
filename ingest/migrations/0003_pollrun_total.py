"""PollRun shares the run record of every data job (comparna.models.RunRecord): it gains ``total``."""

from django.db import migrations, models
from django.db.models import F


def total_is_new(apps, schema_editor):
    # A poll's progress is "done of the new entries": existing rows get the total they always meant.
    apps.get_model("ingest", "PollRun").objects.update(total=F("new"))


class Migration(migrations.Migration):

    dependencies = [
        ("ingest", "0002_comparativeinput_familyassignment"),
    ]

    operations = [
        migrations.AddField(
            model_name="pollrun",
            name="total",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.RunPython(total_is_new, migrations.RunPython.noop),
    ]
