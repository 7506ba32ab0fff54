// The panel's communication center (SPEC §10): the JSON the routes under /api/intercom answer,
// built from the Intercom and the Engine's transcripts. The panel operator acts as a person —
// never as a session: there is no "from" to give, and what they send is marked as theirs.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "superagent/engine.h"
#include "superagent/intercom.h"

namespace superagent {
class Views;
}  // namespace superagent

namespace superagent::panel {

// A command's answer: the HTTP status and its body.
struct ApiReply {
  int status = 200;
  nlohmann::json body;
};

class IntercomApi {
 public:
  // Both must outlive this.
  IntercomApi(Intercom* intercom, Engine* engine, Views* views, Clock* clock)
      : intercom_(intercom), engine_(engine), views_(views), clock_(clock) {}

  // Every session, live and dormant (each with its waiting-message count), every group, and the
  // rules of the road. 503 when the store could not be read (here and in Session and Group).
  ApiReply Overview();
  // One session: its surface, the worker transcript (tool calls summarized), its intercom
  // messages, the Ticket's token usage and the wake budget spent. 404 for an unknown id.
  ApiReply Session(const std::string& id);
  // A group's merged reading since `since` (epoch ms). 404 for an unknown group.
  ApiReply Group(const std::string& id, TimeMs since);

  // Commands; `who` is the person (Panel::Who). `body` is the request's JSON object.
  ApiReply Send(const std::string& who, const std::string& session, const nlohmann::json& body);
  ApiReply CreateGroup(const nlohmann::json& body);
  ApiReply AddMember(const std::string& group, const nlohmann::json& body);
  ApiReply RemoveMember(const std::string& group, const nlohmann::json& body);
  ApiReply DeleteGroup(const std::string& group);
  ApiReply Broadcast(const std::string& who, const std::string& group, const nlohmann::json& body);
  // "New session": the person's explicit request becomes a panel Trigger (PanelRequest) and goes
  // through intake and the Eval like any other; when accepted, its Ticket's worker session is
  // the new session. Answers {ok, trigger_id, thread, by}.
  ApiReply NewSession(const std::string& who, const nlohmann::json& body);

 private:
  Intercom* intercom_;
  Engine* engine_;
  Views* views_;
  Clock* clock_;
};

}  // namespace superagent::panel
