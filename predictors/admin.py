"""Admin for methods, their versions and predictions."""

from django.contrib import admin

from predictors.models import Method, MethodVersion, Prediction


class VersionInline(admin.TabularInline):
    model = MethodVersion
    extra = 0
    readonly_fields = ("version", "program", "fingerprint", "is_current", "created_at")
    fields = readonly_fields


@admin.register(Method)
class MethodAdmin(admin.ModelAdmin):
    list_display = ("name", "input_kind", "pseudoknots", "active", "from_catalogue")
    list_filter = ("active", "input_kind", "from_catalogue")
    inlines = [VersionInline]


@admin.register(Prediction)
class PredictionAdmin(admin.ModelAdmin):
    list_display = ("method_version", "target", "status", "runtime_s", "runner", "finished_at")
    list_filter = ("status", "method_version__method")
    search_fields = ("target__source_id",)
    readonly_fields = [f.name for f in Prediction._meta.fields]
