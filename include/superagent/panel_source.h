// The panel as a Source (ARCHITECTURE "Panel chat", SPEC §10 "sessions a person opens from the
// panel"): a person's "new session" request becomes an ordinary Trigger, so intake, the Eval,
// the Gate and the Mandate rules apply to it as to any explicit request. Its Thread is the
// panel conversation it opened; what the agent says there is delivered by the PanelChannel,
// which records it for the panel to show.
#pragma once

#include <memory>
#include <string>

#include "superagent/channel.h"
#include "superagent/trigger.h"

namespace superagent::panel {

// The Trigger for a person's "new session" request. `person` is the panel operator (who is
// allow-listed by being able to use the panel at all: loopback, or the panel password — the
// Gate admits source "panel" as explicit, admission "panel_operator"). `id` must be unique
// (the caller draws it at random); the Thread is "panel:session:<id>".
Trigger PanelRequest(const std::string& id, const std::string& person, const std::string& text, TimeMs now);

// Delivers messages to "panel:…" channels: they are stored receipts the panel shows (the
// Ticket's transcript), so delivery is recording them done. Never fails.
std::unique_ptr<Channel> MakePanelChannel();

}  // namespace superagent::panel
