// The panel Source: a person's request typed in the panel, and the Channel for replies there.
#include "superagent/panel_source.h"

namespace superagent::panel {

Trigger PanelRequest(const std::string& id, const std::string& person, const std::string& text, TimeMs now) {
  Trigger t;
  t.id = "panel:" + id;
  t.source = "panel";
  t.scope = "session";
  t.actor = person;
  t.human = true;
  t.addressed = true;  // typed to the agent, in the agent's own panel
  t.text = text;
  t.at = now;
  t.threads = {"panel:session:" + id};
  t.channel = "panel:session:" + id;
  t.meta = {{"via", "panel"}};
  return t;
}

namespace {

class PanelChannel : public Channel {
 public:
  bool Handles(const std::string& channel) const override { return channel.rfind("panel:", 0) == 0; }
  // The receipt is the message; the panel reads it from the store. Nothing leaves the daemon,
  // so there is nothing to do twice.
  Delivery Perform(const Effect& effect, bool) override {
    if (effect.kind != "post_message") return Delivery::Failed("the panel cannot perform " + effect.kind);
    return Delivery::Done("panel:" + std::to_string(effect.id));
  }
};

}  // namespace

std::unique_ptr<Channel> MakePanelChannel() { return std::make_unique<PanelChannel>(); }

}  // namespace superagent::panel
