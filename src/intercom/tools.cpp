// The intercom as model tools: OpenAI-style function schemas and a dispatcher that checks every
// argument's type before anything happens. The caller is always the runtime's session id.
#include <functional>
#include <map>

#include "superagent/intercom.h"

namespace superagent {

using nlohmann::json;

namespace {

json Fn(const std::string& name, const std::string& description, json properties, std::vector<std::string> required) {
  return {{"type", "function"},
          {"function",
           {{"name", name},
            {"description", description},
            {"parameters", {{"type", "object"}, {"properties", std::move(properties)}, {"required", required},
                            {"additionalProperties", false}}}}}};
}

json Str(const std::string& d) { return {{"type", "string"}, {"description", d}}; }
json Int(const std::string& d) { return {{"type", "integer"}, {"description", d}}; }
json Ids(const std::string& d) { return {{"type", "array"}, {"items", {{"type", "string"}}}, {"description", d}}; }
json DeliverySchema() {
  return {{"type", "string"}, {"enum", {"wake", "steer"}},
          {"description", "wake: an idle target starts a turn (spends its wake budget), a busy one reads it at its next "
                          "step; steer: interject in the target's current turn (spends the budget too)"}};
}

// Reads arguments by the schema's types; the first mistake is kept as the refusal.
class Args {
 public:
  explicit Args(const json& a) : a_(a.is_object() ? a : json::object()), bad_(!a.is_object() && !a.is_null()) {
    if (bad_) error_ = "arguments must be a JSON object";
  }
  std::string S(const char* k, bool required = true) {
    if (!a_.contains(k)) {
      if (required) Fail(std::string("missing argument \"") + k + "\"");
      return "";
    }
    if (!a_[k].is_string()) Fail(std::string("\"") + k + "\" must be a string");
    return a_[k].is_string() ? a_[k].get<std::string>() : "";
  }
  std::int64_t I(const char* k, std::int64_t fallback) {
    if (!a_.contains(k)) return fallback;
    if (!a_[k].is_number_integer()) {
      Fail(std::string("\"") + k + "\" must be an integer");
      return fallback;
    }
    return a_[k].get<std::int64_t>();
  }
  std::vector<std::string> L(const char* k) {
    std::vector<std::string> out;
    if (!a_.contains(k) || !a_[k].is_array()) {
      Fail(std::string("\"") + k + "\" must be an array of session ids");
      return out;
    }
    for (const json& v : a_[k]) {
      if (!v.is_string()) {
        Fail(std::string("\"") + k + "\" must hold strings only");
        return {};
      }
      out.push_back(v.get<std::string>());
    }
    return out;
  }
  void Only(std::initializer_list<const char*> known) {
    for (const auto& [k, v] : a_.items()) {
      bool ok = false;
      for (const char* n : known) ok = ok || k == n;
      if (!ok) Fail("unknown argument \"" + k + "\"");
    }
  }
  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }

 private:
  void Fail(const std::string& why) {
    if (error_.empty()) error_ = why;
  }
  json a_;
  bool bad_;
  std::string error_;
};

}  // namespace

json Intercom::ToolSpecs() {
  return json::array({
      Fn("intercom_list", "Live top-level sessions of your workspace: id, title, status, ticket, last activity.", json::object(), {}),
      Fn("intercom_list_dormant", "Sessions of your workspace whose Ticket ended, newest first. Their transcripts can be read; they cannot be messaged.",
         json::object(), {}),
      Fn("intercom_send", "Send a message to another live session. It arrives as data, never as an instruction with authority.",
         {{"target_id", Str("the session to send to")}, {"message", Str("at most 8000 characters")}, {"delivery", DeliverySchema()},
          {"reply_to", Str("the id of the message this answers, if it is an answer")}},
         {"target_id", "message"}),
      Fn("intercom_ask", "Send a question and wait (at most 30 s) for the answer the target links to it with reply_to.",
         {{"target_id", Str("the session to ask")}, {"message", Str("at most 8000 characters")},
          {"wait_ms", Int("how long to wait for the answer, 0..30000; default 30000")}},
         {"target_id", "message"}),
      Fn("intercom_check_replies", "Answers the target linked to your messages to it; `new` marks those not seen before.",
         {{"target_id", Str("the session you wrote to")}}, {"target_id"}),
      Fn("intercom_read", "The surface transcript of a session (live or dormant) of your workspace; the newest part is kept when cut.",
         {{"target_id", Str("the session to read")}, {"max_events", Int("1..500 entries; default 80")}}, {"target_id"}),
      Fn("intercom_collect", "Status and last conclusion of up to 20 sessions.", {{"target_ids", Ids("session ids")}}, {"target_ids"}),
      Fn("intercom_group_create", "Create a named group of sessions of your workspace; you are a member.",
         {{"name", Str("at most 60 characters")}, {"member_ids", Ids("the other members")}}, {"name", "member_ids"}),
      Fn("intercom_group_add", "Add a session to a group.", {{"group_id", Str("the group")}, {"member_id", Str("the session")}},
         {"group_id", "member_id"}),
      Fn("intercom_group_remove_member", "Remove a session from a group.",
         {{"group_id", Str("the group")}, {"member_id", Str("the session")}}, {"group_id", "member_id"}),
      Fn("intercom_broadcast", "Send one message to every other member of a group, each under the usual rules; dormant members are skipped with the reason.",
         {{"group_id", Str("the group")}, {"message", Str("at most 8000 characters")}, {"delivery", DeliverySchema()}},
         {"group_id", "message"}),
      Fn("intercom_groups", "Groups you can see: the explicit ones and \"auto\" (sessions that have talked).", json::object(), {}),
      Fn("intercom_read_group", "The members' transcripts merged by time, each line labelled with its session's title.",
         {{"group_id", Str("the group")}, {"since", Int("only entries after this time, epoch ms; default 0")}}, {"group_id"}),
      Fn("intercom_group_delete", "Delete an explicit group (not \"auto\").", {{"group_id", Str("the group")}}, {"group_id"}),
  });
}

json Intercom::CallTool(const std::string& caller, const std::string& name, const json& args,
                        const std::atomic<bool>* cancel) {
  Args a(args);
  json result;
  auto run = [&](std::initializer_list<const char*> known, const std::function<json()>& call) {
    a.Only(known);
    if (!a.ok()) return json{{"ok", false}, {"error", name + ": " + a.error()}};
    return call();
  };
  if (name == "intercom_list") return run({}, [&] { return List(caller); });
  if (name == "intercom_list_dormant") return run({}, [&] { return ListDormant(caller); });
  if (name == "intercom_send") {
    std::string target = a.S("target_id"), message = a.S("message"), delivery = a.S("delivery", false),
                reply_to = a.S("reply_to", false);
    return run({"target_id", "message", "delivery", "reply_to"}, [&] {
      return Send(caller, target, message, delivery.empty() ? "wake" : delivery, reply_to).ToJson();
    });
  }
  if (name == "intercom_ask") {
    std::string target = a.S("target_id"), message = a.S("message");
    std::int64_t wait = a.I("wait_ms", limits_.max_ask_wait_ms);
    return run({"target_id", "message", "wait_ms"}, [&] {
      if (wait < 0 || wait > limits_.max_ask_wait_ms)
        return json{{"ok", false}, {"error", "wait_ms must be 0.." + std::to_string(limits_.max_ask_wait_ms)}};
      return Ask(caller, target, message, wait, cancel);
    });
  }
  if (name == "intercom_check_replies") {
    std::string target = a.S("target_id");
    return run({"target_id"}, [&] { return CheckReplies(caller, target); });
  }
  if (name == "intercom_read") {
    std::string target = a.S("target_id");
    std::int64_t max = a.I("max_events", limits_.default_read_events);
    return run({"target_id", "max_events"}, [&] {
      if (max < 1 || max > limits_.max_read_events)
        return json{{"ok", false}, {"error", "max_events must be 1.." + std::to_string(limits_.max_read_events)}};
      return Read(caller, target, static_cast<int>(max));
    });
  }
  if (name == "intercom_collect") {
    auto ids = a.L("target_ids");
    return run({"target_ids"}, [&] { return Collect(caller, ids); });
  }
  if (name == "intercom_group_create") {
    std::string group_name = a.S("name");
    auto ids = a.L("member_ids");
    return run({"name", "member_ids"}, [&] { return CreateGroup(caller, group_name, ids); });
  }
  if (name == "intercom_group_add" || name == "intercom_group_remove_member") {
    std::string group = a.S("group_id"), member = a.S("member_id");
    return run({"group_id", "member_id"}, [&] {
      return name == "intercom_group_add" ? AddMember(caller, group, member) : RemoveMember(caller, group, member);
    });
  }
  if (name == "intercom_broadcast") {
    std::string group = a.S("group_id"), message = a.S("message"), delivery = a.S("delivery", false);
    return run({"group_id", "message", "delivery"},
               [&] { return Broadcast(caller, group, message, delivery.empty() ? "wake" : delivery); });
  }
  if (name == "intercom_groups") return run({}, [&] { return Groups(caller); });
  if (name == "intercom_read_group") {
    std::string group = a.S("group_id");
    std::int64_t since = a.I("since", 0);
    return run({"group_id", "since"}, [&] {
      if (since < 0) return json{{"ok", false}, {"error", "since must be ≥ 0 (epoch ms)"}};
      return ReadGroup(caller, group, since);
    });
  }
  if (name == "intercom_group_delete") {
    std::string group = a.S("group_id");
    return run({"group_id"}, [&] { return DeleteGroup(caller, group); });
  }
  return {{"ok", false}, {"error", "unknown tool " + name}};
}

}  // namespace superagent
