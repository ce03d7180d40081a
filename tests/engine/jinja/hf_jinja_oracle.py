"""The oracle: Python's jinja2 configured exactly as Hugging Face transformers'
apply_chat_template configures it (transformers/utils/chat_template_utils.py,
_compile_jinja_template and render_jinja_template):

    ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                  extensions=[AssistantTracker, jinja2.ext.loopcontrols])
    filters["tojson"] = json.dumps(x, ensure_ascii=False, indent=..., separators=..., sort_keys=...)
    globals["raise_exception"] raises TemplateError(message)
    globals["strftime_now"] = datetime.now().strftime(format)
    template.render(messages=..., tools=None, documents=None,
                    add_generation_prompt=..., **special_tokens_map, **kwargs)
    continue_final_message: the rendered chat cut after the final message

AssistantTracker (the {% generation %} tag, for assistant masks) is left out:
none of the templates under test use it.
"""
import json
from datetime import datetime

try:
    import jinja2
    import jinja2.ext
    from jinja2.sandbox import ImmutableSandboxedEnvironment
except ImportError:  # the caller skips, saying so
    jinja2 = None


def _raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def _tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def _strftime_now(format):
    return datetime.now().strftime(format)


def environment():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = _strftime_now
    return env


def special_tokens(config):
    """special_tokens_map: the tokens the tokenizer config sets (a string or an AddedToken object)."""
    out = {}
    for key in ("bos_token", "eos_token", "unk_token", "pad_token"):
        value = config.get(key)
        if isinstance(value, dict):
            value = value.get("content")
        if value is not None:
            out[key] = value
    return out


def render_request(template, config, request):
    """What apply_chat_template(tokenize=False) returns for one request
    ({"messages": [...], "add_generation_prompt": bool, "continue_final_message":
    bool, other keys = kwargs})."""
    kwargs = dict(special_tokens(config))
    named = ("messages", "tools", "documents", "add_generation_prompt", "continue_final_message")
    extra = {k: v for k, v in request.items() if k not in named}
    kwargs.update(extra)
    add_generation_prompt = request.get("add_generation_prompt", False)
    continue_final = request.get("continue_final_message", False)
    if continue_final and add_generation_prompt:
        raise ValueError("continue_final_message and add_generation_prompt are not compatible")
    rendered = template.render(messages=request["messages"], tools=request.get("tools"),
                               documents=request.get("documents"), add_generation_prompt=add_generation_prompt,
                               **kwargs)
    if continue_final:
        rendered = continue_final_message(rendered, request["messages"][-1]["content"])
    return rendered


def continue_final_message(rendered, final_message):
    """transformers' apply_chat_template(continue_final_message=True) after
    rendering (render_jinja_template in chat_template_utils.py), as written
    there: Python's strip() (Unicode whitespace), and the trailing spaces kept
    only when the text at the message's place equals the message itself."""
    if isinstance(final_message, (list, tuple)):
        for block in reversed(final_message):
            if "text" in block:
                final_message = block["text"]
                break
        else:
            raise ValueError("no text block in the final message")
    if final_message.strip() not in rendered:
        raise ValueError("continue_final_message is set but the final message does not appear in the chat")
    loc = rendered.rindex(final_message.strip())
    if rendered[loc:loc + len(final_message.lstrip())] == final_message:
        return rendered[:loc + len(final_message.lstrip())]
    return rendered[:loc + len(final_message.strip())]
