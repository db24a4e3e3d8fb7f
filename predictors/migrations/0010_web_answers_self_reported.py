"""Web services' answers for targets whose reference was public are self-reported (issue 36), like uploads
(0008): the synchronous answers and the callbacks stored before the rule, except those on a blind target
received before its week's release."""

from django.db import migrations
from django.db.models import F


def mark_web_answers(apps, schema_editor):
    Prediction = apps.get_model("predictors", "Prediction")
    MethodVersion = apps.get_model("predictors", "MethodVersion")
    web = [v.pk for v in MethodVersion.objects.only("pk", "spec") if (v.spec or {}).get("kind") == "web"]
    answers = Prediction.objects.filter(method_version_id__in=web, status="ok", self_reported=False)
    blind = answers.filter(target__blind__week__release_at__gt=F("finished_at"))
    answers.exclude(pk__in=blind.values("pk")).update(self_reported=True)


class Migration(migrations.Migration):

    dependencies = [
        ("predictors", "0009_version_approval"),
        ("blind", "0001_initial"),
    ]

    operations = [
        migrations.RunPython(mark_web_answers, migrations.RunPython.noop),
    ]
