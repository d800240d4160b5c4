"""Status errors with the messages, reasons and details kube-apiserver answers."""

CONFLICT_MODIFIED = ("the object has been modified; please apply your changes to the latest "
                     "version and try again")
CONTINUE_EXPIRED = (
    "The provided continue parameter is too old to display a consistent list result. You can "
    "start a new list without the continue parameter, or use the continue token in this "
    "response to retrieve the remainder of the results. Continuing with the provided token "
    "results in an inconsistent list - objects that were created, modified, or deleted between "
    "the time the first chunk was returned and now may show up in the list.")
LIST_EXPIRED = "The resourceVersion for the provided list is too old."


class ApiError(Exception):
    def __init__(self, code, reason, message, details=None, headers=None, meta=None):
        Exception.__init__(self, message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.headers = headers or []
        self.meta = meta or {}

    def status(self):
        s = {"kind": "Status", "apiVersion": "v1", "metadata": dict(self.meta),
             "status": "Failure", "message": self.message}
        if self.reason:
            s["reason"] = self.reason
        if self.details is not None:
            s["details"] = self.details
        s["code"] = self.code
        return s


def _details(res, name=None, **extra):
    d = {}
    if name:
        d["name"] = name
    if res is not None and res.group:
        d["group"] = res.group
    if res is not None:
        d["kind"] = res.plural
    d.update(extra)
    return d


def not_found(res, name):
    return ApiError(404, "NotFound", '%s "%s" not found' % (res.qualified, name),
                    _details(res, name))


def not_found_gr(group, resource, name):
    q = resource if not group else resource + "." + group
    d = {"name": name}
    if group:
        d["group"] = group
    d["kind"] = resource
    return ApiError(404, "NotFound", '%s "%s" not found' % (q, name), d)


def already_exists(res, name):
    return ApiError(409, "AlreadyExists", '%s "%s" already exists' % (res.qualified, name),
                    _details(res, name))


def conflict(res, name, why=CONFLICT_MODIFIED):
    return ApiError(409, "Conflict", 'Operation cannot be fulfilled on %s "%s": %s'
                    % (res.qualified, name, why), _details(res, name))


def invalid(res, name, causes, kind=None):
    """causes: [(field, type, detail)]; detail is the message after the field name."""
    qk = kind if kind is not None else res.qualified_kind
    msgs = ["%s: %s" % (f, d) if f else d for f, _, d in causes]
    agg = msgs[0] if len(msgs) == 1 else "[" + ", ".join(msgs) + "]"
    d = {"name": name} if name else {}
    if res is not None and kind is None:
        if res.group:
            d["group"] = res.group
        d["kind"] = res.kind
    d["causes"] = [{"reason": t, "message": det, "field": f} for f, t, det in causes]
    return ApiError(422, "Invalid", '%s "%s" is invalid: %s' % (qk, name or "", agg), d)


def bad_request(message):
    return ApiError(400, "BadRequest", message)


def forbidden(group, resource, name, reason):
    if not resource:
        msg = "forbidden: %s" % reason
    else:
        q = resource if not group else resource + "." + group
        msg = ('%s "%s" is forbidden: %s' % (q, name, reason)) if name else \
            "%s is forbidden: %s" % (q, reason)
    d = {}
    if name:
        d["name"] = name
    if group:
        d["group"] = group
    if resource:
        d["kind"] = resource
    return ApiError(403, "Forbidden", msg, d)


def unauthorized():
    return ApiError(401, "Unauthorized", "Unauthorized")


def expired(message, cont=None):
    meta = {"continue": cont} if cont else {}
    return ApiError(410, "Expired", message, meta=meta)


def internal(message):
    return ApiError(500, "InternalError", "Internal error occurred: %s" % message,
                    {"causes": [{"message": message}]})


def unsupported_media(types):
    return ApiError(415, "UnsupportedMediaType",
                    "the body of the request was in an unknown format - accepted media types "
                    "include: " + ", ".join(types))


def method_not_supported(res, action):
    return ApiError(405, "MethodNotAllowed", '%s is not supported on resources of kind "%s"'
                    % (action, res.qualified), _details(res))


def too_large_rv(want, current):
    return ApiError(504, "Timeout", "Timeout: Too large resource version: %d, current: %d"
                    % (want, current),
                    {"causes": [{"reason": "ResourceVersionTooLarge",
                                 "message": "Too large resource version"}],
                     "retryAfterSeconds": 1})


def generic(code, message=None):
    """An answer the fault injector gives: the status kube-apiserver sends for that code."""
    if code == 429:
        return ApiError(429, "TooManyRequests", message or
                        "Too many requests, please try again later.", {"retryAfterSeconds": 1})
    if code == 503:
        return ApiError(503, "ServiceUnavailable", message or
                        "the server is currently unable to handle the request")
    if code == 504:
        return ApiError(504, "Timeout", message or "Timeout: request did not complete within "
                        "the allotted timeout", {"retryAfterSeconds": 1})
    if code == 500:
        return internal(message or "injected fault")
    reasons = {400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound",
               409: "Conflict", 410: "Expired", 422: "Invalid"}
    return ApiError(code, reasons.get(code, "InternalError" if code >= 500 else ""),
                    message or "injected fault")
