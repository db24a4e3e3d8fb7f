"""The owner's pages: sign-up and confirmation, their methods (register, edit, deactivate, publication,
progress, scores, comparison with public methods) and API tokens. Everything about a method is found
through :func:`comparna.owners.methods.owned`: anyone else's method is a 404, public or not."""

from __future__ import annotations

import dataclasses

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.contrib.auth.mixins import LoginRequiredMixin
from django.core.exceptions import ValidationError
from django.db.models import Count
from django.http import Http404, HttpResponseRedirect, JsonResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.views import View
from django.views.generic import TemplateView

from comparna.models import Subset
from comparna.owners import accounts
from comparna.owners import methods as svc
from comparna.owners.counters import attempt_key, count_attempt
from comparna.owners.eta import queue_eta
from comparna.owners.forms import OwnerMethodForm, SignUpForm, TokenForm
from comparna.owners.images import UploadRefused, store_image_upload
from comparna.owners.login import ThrottledAuthenticationForm
from comparna.owners.models import ApiToken, ImageUpload, OwnerProfile
from comparna.owners.throttle import client_address
from comparna.params import ascii_int
from predictors.core.spec import PredictorSpec
from predictors.forms import spec_token, token_matches
from predictors.models import Method, Prediction, TrialRun
from predictors.services import spec_from_version, spec_to_json
from predictors.trials import TrialBusy, is_expired, request_test_run, time_limit_s


class OwnerSignUpView(View):
    """``/account/signup/``: a new method owner (inactive until the e-mail address is confirmed)."""

    template_name = "owners/signup.html"

    def get(self, request):
        return render(request, self.template_name, {"form": SignUpForm()})

    def post(self, request):
        # every sign-up mails someone: a budget per client address (issue 36), counted before anything else
        count = count_attempt(
            key=attempt_key("signup-addr", client_address(request)), window_s=settings.SIGNUP_WINDOW_S
        )
        if count > settings.SIGNUPS_PER_ADDRESS:
            return render(request, self.template_name, {"form": SignUpForm(), "too_many": True}, status=429)
        form = SignUpForm(request.POST)
        if not form.is_valid():
            return render(request, self.template_name, {"form": form}, status=400)
        d = form.cleaned_data
        accounts.sign_up(
            username=d["username"], email=d["email"], password=d["password1"], affiliation=d["affiliation"]
        )
        return render(request, "owners/signup_done.html", {"email": d["email"]})


class OwnerConfirmView(View):
    """``/account/confirm/<token>/``: the link of the confirmation e-mail."""

    def get(self, request, token: str):
        try:
            user = accounts.confirm_email(token)
        except accounts.ConfirmationInvalid as exc:
            return render(request, "owners/confirm.html", {"error": str(exc)}, status=400)
        return render(request, "owners/confirm.html", {"confirmed_user": user})


class OwnerLoginView(auth_views.LoginView):
    template_name = "owners/login.html"
    redirect_authenticated_user = True
    authentication_form = ThrottledAuthenticationForm


class OwnerLogoutView(auth_views.LogoutView):
    pass


def saved_message(name: str, version, *, new: bool) -> str:
    """The success message after saving: what was queued and when it should be done."""
    counts = dict(version.predictions.values_list("status").annotate(n=Count("id")).order_by())
    queued = counts.get(Prediction.Status.QUEUED, 0) + counts.get(Prediction.Status.RUNNING, 0)
    too_long = counts.get(Prediction.Status.TOO_LONG, 0)
    what = "registered as a development method" if new else "saved as a new version"
    text = f"{name} {what}; {queued} prediction{'s' * (queued != 1)} queued"
    if too_long:
        text += f" ({too_long} target{'s' * (too_long != 1)} over its length limit recorded as too long)"
    eta = queue_eta(version)
    if queued:
        text += f"; {eta['text']}"
    return text + "."


def _trial_state(trial: TrialRun | None) -> str | None:
    if trial is None:
        return None
    return "expired" if is_expired(trial) else trial.status


def _trial_token(trial: TrialRun | None) -> str:
    """Save token: the test run gave a structure, or a web service accepted the job (its structure comes by
    upload later), or the program answered something unreadable — a warning, not a block (issue 29): the
    owner's parser may be right for real targets, and such answers are recorded as "unparsable" anyway."""
    if trial is None or trial.status != TrialRun.Status.DONE or not trial.result:
        return ""
    if trial.result.get("ok") or trial.result.get("status") in ("awaiting", "unparsable"):
        return spec_token(PredictorSpec.from_dict(trial.spec))
    return ""


class OwnerHomeView(LoginRequiredMixin, TemplateView):
    """``/account/``: the owner's state, methods with progress, and what to do next."""

    template_name = "owners/home.html"

    def get_context_data(self, **kwargs):
        ctx = super().get_context_data(**kwargs)
        user = self.request.user
        profile, _ = OwnerProfile.objects.get_or_create(
            user=user, defaults={"email_confirmed_at": timezone.now()}
        )
        rows = []
        for m in Method.objects.filter(owner=user).order_by("name"):
            version = m.working_version
            kind = (version.spec.get("kind") or "command") if version else m.kind
            rows.append({"method": m, "progress": svc.progress(version), "kind": kind})
        ctx.update(
            profile=profile,
            rows=rows,
            can_register=svc.is_approved_owner(user),
            tokens=ApiToken.objects.filter(user=user, revoked_at__isnull=True).count(),
        )
        return ctx

    def post(self, request):
        OwnerProfile.objects.filter(user=request.user).update(notify=bool(request.POST.get("notify")))
        messages.success(request, "Digest setting saved.")
        return HttpResponseRedirect(reverse("owner-home"))


class OwnerMethodFormView(LoginRequiredMixin, View):
    """``/account/methods/new/`` and ``/account/methods/<pk>/edit/``: a spec of any kind, test-run by a worker
    (the page polls), saved only after a successful test run of exactly that spec."""

    template_name = "owners/method_form.html"

    def _method(self, request, pk):
        if pk is None:
            return None
        try:
            return svc.owned(request.user, pk)
        except Method.DoesNotExist:
            raise Http404("no such method of yours") from None

    def _render(self, request, form, method, trial=None, status=200):
        state = _trial_state(trial)
        ctx = {
            "form": form,
            "method": method,
            "trial": trial,
            "state": state,
            "result": trial.result if trial is not None else None,
            "limit_s": time_limit_s(),
            "poll_url": reverse("owner-test-run", args=[trial.pk])
            if trial and state in ("queued", "running")
            else None,
            "can_save": bool(form.is_bound and form.data.get("tested")),
            "can_register": svc.is_approved_owner(request.user),
            "max_mb": settings.IMAGE_ARCHIVE_MAX_MB,
            "unparsable_savable": True,
        }
        return render(request, self.template_name, ctx, status=status)

    def _uploads(self, request):
        return list(ImageUpload.objects.filter(owner=request.user))

    def get(self, request, pk=None):
        method = self._method(request, pk)
        uploads = self._uploads(request)
        if method is not None and method.working_version is not None:
            spec = spec_from_version(method.working_version)
            if method.working_version.proposed_training_data is not None:  # theirs, awaiting approval
                spec = dataclasses.replace(
                    spec, training_data=tuple(method.working_version.proposed_training_data)
                )
            form = OwnerMethodForm(
                initial=OwnerMethodForm.initial_from_spec(spec), uploads=uploads, fixed_name=method.name
            )
        else:
            form = OwnerMethodForm(uploads=uploads, fixed_name=None, user=request.user)
        return self._render(request, form, method)

    def post(self, request, pk=None):
        method = self._method(request, pk)
        fixed = method.name if method else None
        if not svc.is_approved_owner(request.user):
            form = OwnerMethodForm(
                request.POST, uploads=self._uploads(request), fixed_name=fixed, user=request.user
            )
            form.is_valid()
            form.add_error(
                None, "Your account awaits staff approval; you can register methods once approved."
            )
            return self._render(request, form, method, status=403)
        data = request.POST.copy()
        upload_error = None
        if getattr(request, "upload_too_large", False):
            upload_error = f"The archive is over the {settings.IMAGE_ARCHIVE_MAX_MB} MB limit."
        elif request.FILES.get("archive"):
            try:
                upload = store_image_upload(user=request.user, uploaded=request.FILES["archive"])
            except UploadRefused as exc:
                upload_error = f"The archive was refused: {exc}"
            else:
                data["image_archive"] = upload.sha256
                data["tested"] = ""
        uploads = self._uploads(request)
        form = OwnerMethodForm(data, uploads=uploads, fixed_name=fixed, user=request.user)
        valid = form.is_valid()
        if upload_error:
            form.add_error("archive", upload_error)
            return self._render(request, form, method, status=400)
        if not valid:
            return self._render(request, form, method, status=400)
        spec = form.spec
        trial = None
        if "_save" in request.POST:
            if not token_matches(form.cleaned_data["tested"], spec):
                form.add_error(
                    None,
                    "Run a successful test run of exactly this specification before saving "
                    "(a field changed since the last successful test run, or none was made).",
                )
                return self._render(request, form, method, status=400)
            try:
                version = svc.register_owner_method(user=request.user, spec=spec, method=method)
            except svc.NotAllowed as exc:
                form.add_error("name" if method is None else None, str(exc))
                return self._render(request, form, method, status=400)
            messages.success(request, saved_message(spec.name, version, new=method is None))
            return HttpResponseRedirect(reverse("owner-method", args=[version.method.pk]))
        if "_check" in request.POST:
            trial = self._own_trial(request, form.cleaned_data["trial"])
            same = trial is not None and trial.spec == spec_to_json(spec)
            data["tested"] = _trial_token(trial) if same else ""
        else:
            try:
                trial = request_test_run(
                    spec=spec, sequence=form.cleaned_data["test_sequence"], user=request.user
                )
            except TrialBusy as exc:
                form.add_error(None, str(exc))
                return self._render(request, form, method, status=409)
            data["tested"] = ""
            data["trial"] = str(trial.pk)
        form = OwnerMethodForm(data, uploads=uploads, fixed_name=fixed, user=request.user)
        form.is_valid()
        return self._render(request, form, method, trial=trial)

    def _own_trial(self, request, trial_id):
        try:
            return (
                TrialRun.objects.filter(pk=trial_id, requested_by=request.user).first() if trial_id else None
            )
        except ValidationError:
            return None


class OwnerTestRunView(LoginRequiredMixin, View):
    """What the registration page polls: the owner's own test run, rendered."""

    def get(self, request, trial_id):
        trial = TrialRun.objects.filter(pk=trial_id, requested_by=request.user).first()
        if trial is None:
            raise Http404("no such test run")
        state = _trial_state(trial)
        html = render_to_string(
            "predictors/_test_result.html",
            {"trial": trial, "state": state, "result": trial.result, "limit_s": time_limit_s(),
             "unparsable_savable": True},
            request=request,
        )
        return JsonResponse({"status": state, "html": html, "tested": _trial_token(trial)})


class OwnerMethodView(LoginRequiredMixin, TemplateView):
    """``/account/methods/<pk>/``: progress, outcomes and scores of the owner's method (any visibility)."""

    template_name = "owners/method.html"

    def get_context_data(self, **kwargs):
        ctx = super().get_context_data(**kwargs)
        try:
            method = svc.owned(self.request.user, kwargs["pk"])
        except Method.DoesNotExist:
            raise Http404("no such method of yours") from None
        current = method.working_version  # the owner's latest, awaiting approval or not
        status = self.request.GET.get("status") or None
        if status not in {s.value for s in Prediction.Status}:
            status = None
        ctx.update(
            method=method,
            current=current,
            approved=method.current_version,
            pending=current is not None and current.pending_review,
            spec=current.spec if current else {},
            progress=svc.progress(current),
            eta=queue_eta(current) if current is not None else None,
            datasets=svc.dataset_summaries(method),
            outcomes=svc.recent_outcomes(method, status=status),
            status_filter=status,
            statuses=list(Prediction.Status),
            versions=list(method.versions.all()),
            public_methods=svc.comparable_methods(method),
            subsets=Subset.objects.select_related("dataset").order_by("dataset__slug", "order", "slug"),
        )
        return ctx


class OwnerMethodActionView(LoginRequiredMixin, View):
    """POST ``/account/methods/<pk>/action/``: deactivate, reactivate or ask for publication."""

    def post(self, request, pk):
        try:
            method = svc.owned(request.user, pk)
        except Method.DoesNotExist:
            raise Http404("no such method of yours") from None
        action = request.POST.get("action")
        if action == "deactivate":
            svc.set_active(method=method, active=False)
            messages.success(
                request, f"{method.name} is deactivated: its queued predictions wait, nothing more is run; "
                "results stay."
            )
        elif action == "reactivate":
            n = svc.set_active(method=method, active=True)
            messages.success(request, f"{method.name} is active again: {n} predictions queued.")
        elif action == "publish":
            svc.request_publication(method=method)
            messages.success(request, "Publication requested: staff will review it; you are told by e-mail.")
        else:
            return JsonResponse({"error": "unknown action"}, status=400)
        return HttpResponseRedirect(reverse("owner-method", args=[method.pk]))


class OwnerCompareView(LoginRequiredMixin, TemplateView):
    """``/account/methods/<pk>/compare/?with=<public method>&subset=<pk>&definition=...``."""

    template_name = "owners/compare.html"

    def get_context_data(self, **kwargs):
        ctx = super().get_context_data(**kwargs)
        try:
            method = svc.owned(self.request.user, kwargs["pk"])
        except Method.DoesNotExist:
            raise Http404("no such method of yours") from None
        q = self.request.GET
        other = Method.objects.public().filter(pk=_int(q.get("with"))).first()
        subset = Subset.objects.select_related("dataset").filter(pk=_int(q.get("subset"))).first()
        if other is None or subset is None or other.pk == method.pk:
            raise Http404("choose a public method and a subset")
        definitions = subset.definitions()
        definition = q.get("definition") if q.get("definition") in definitions else definitions[0]
        if method.working_version is None or other.current_version is None:
            raise Http404("a method without a current version")
        comp = svc.compare_with_public(
            method=method, other=other, subset=subset, definition=definition, seed=settings.RANKING_SEED
        )
        ctx.update(
            method=method,
            other=other,
            subset=subset,
            definition=definition,
            definitions=definitions,
            comp=comp,
        )
        return ctx


def _int(value) -> int | None:
    return ascii_int(value) if value else None


class OwnerTokensView(LoginRequiredMixin, View):
    """``/account/tokens/``: make (the key is shown once) and revoke API tokens."""

    template_name = "owners/tokens.html"

    def _render(self, request, form, new_key=None, status=200):
        tokens = ApiToken.objects.filter(user=request.user)
        return render(
            request,
            self.template_name,
            {"form": form, "tokens": tokens, "new_key": new_key, "api_url": settings.SITE_URL},
            status=status,
        )

    def get(self, request):
        return self._render(request, TokenForm())

    def post(self, request):
        if "revoke" in request.POST:
            n = ApiToken.objects.filter(
                user=request.user, pk=_int(request.POST.get("revoke")), revoked_at__isnull=True
            ).update(revoked_at=timezone.now())
            if n:
                messages.success(request, "Token revoked.")
            return HttpResponseRedirect(reverse("owner-tokens"))
        form = TokenForm(request.POST)
        if not form.is_valid():
            return self._render(request, form, status=400)
        _token, key = ApiToken.issue(user=request.user, name=form.cleaned_data["name"])
        return self._render(request, TokenForm(), new_key=key)
