#include "superagent/trigger.h"

namespace superagent {
namespace {

Status FieldError(const std::string& field, const std::string& what) {
  return Status::InvalidArgument("trigger." + field + ": " + what);
}

bool IsKnownSource(const std::string& s) { return s == "github" || s == "feishu" || s == "panel"; }

}  // namespace

Result<Trigger> TriggerFromJson(const nlohmann::json& j) {
  if (!j.is_object()) return Status::InvalidArgument("trigger: must be a JSON object");
  Trigger t;
  auto req_string = [&](const char* key, std::string* out) -> Status {
    auto it = j.find(key);
    if (it == j.end()) return FieldError(key, "is required");
    if (!it->is_string() || it->get<std::string>().empty()) return FieldError(key, "must be a non-empty string");
    *out = it->get<std::string>();
    return Status::Ok();
  };
  auto req_bool = [&](const char* key, bool* out) -> Status {
    auto it = j.find(key);
    if (it == j.end()) return FieldError(key, "is required");
    if (!it->is_boolean()) return FieldError(key, "must be true or false");
    *out = it->get<bool>();
    return Status::Ok();
  };
  for (Status s : {req_string("id", &t.id), req_string("source", &t.source), req_string("scope", &t.scope)})
    if (!s.ok()) return s;
  if (!IsKnownSource(t.source)) return FieldError("source", "must be one of github, feishu, panel (got \"" + t.source + "\")");
  if (t.source == "github" && t.scope != "issues" && t.scope != "pulls" && t.scope != "comments" && t.scope != "ci")
    return FieldError("scope", "a github scope is one of issues, pulls, comments, ci (got \"" + t.scope + "\")");
  if (t.source == "feishu" && t.scope != "direct" && t.scope != "other_mentions" &&
      (t.scope.rfind("chat:", 0) != 0 || t.scope.size() == 5))
    return FieldError("scope", "a feishu scope is chat:<id>, direct or other_mentions (got \"" + t.scope + "\")");

  auto actor = j.find("actor");
  if (actor == j.end()) return FieldError("actor", "is required (null for CI)");
  if (actor->is_null()) {
    if (t.scope != "ci") return FieldError("actor", "may be null only for scope ci");
  } else if (actor->is_string() && !actor->get<std::string>().empty()) {
    t.actor = actor->get<std::string>();
  } else {
    return FieldError("actor", "must be a non-empty string or null");
  }
  for (Status s : {req_bool("human", &t.human), req_bool("addressed", &t.addressed)})
    if (!s.ok()) return s;

  auto text = j.find("text");
  if (text == j.end() || !text->is_string()) return FieldError("text", "must be a string");
  t.text = text->get<std::string>();

  std::string at;
  if (Status s = req_string("at", &at); !s.ok()) return s;
  if (!ParseTime(at, &t.at)) return FieldError("at", "must be an RFC 3339 time such as 2026-12-02T13:34:24Z (got \"" + at + "\")");

  auto threads = j.find("threads");
  if (threads == j.end() || !threads->is_array() || threads->empty())
    return FieldError("threads", "must be a non-empty array of strings");
  for (const auto& th : *threads) {
    if (!th.is_string() || th.get<std::string>().empty()) return FieldError("threads", "must be a non-empty array of strings");
    t.threads.push_back(th.get<std::string>());
  }
  if (Status s = req_string("channel", &t.channel); !s.ok()) return s;

  auto meta = j.find("meta");
  if (meta != j.end() && !meta->is_null()) {
    if (!meta->is_object()) return FieldError("meta", "must be an object");
    t.meta = *meta;
  }
  return t;
}

nlohmann::json TriggerToJson(const Trigger& t) {
  return nlohmann::json{{"id", t.id},
                        {"source", t.source},
                        {"scope", t.scope},
                        {"actor", t.actor ? nlohmann::json(*t.actor) : nlohmann::json(nullptr)},
                        {"human", t.human},
                        {"addressed", t.addressed},
                        {"text", t.text},
                        {"at", FormatTime(t.at)},
                        {"threads", t.threads},
                        {"channel", t.channel},
                        {"meta", t.meta}};
}

Status ValidateTrigger(const Trigger& t) { return TriggerFromJson(TriggerToJson(t)).status(); }

std::string TriggerUrl(const Trigger& t) {
  for (const char* key : {"html_url", "url"}) {
    auto it = t.meta.find(key);
    if (it != t.meta.end() && it->is_string()) return it->get<std::string>();
  }
  return "";
}

}  // namespace superagent
