// SPEC §4.5 revalidation matrix, one test per row, plus the "still listens" requirement.
#include "engine_fixture.h"

#include "core/revalidate.h"

namespace superagent::testing {
namespace {

Trigger Origin(const std::string& actor, bool human, bool addressed, const std::string& source = "github",
               const std::string& scope = "comments") {
  Trigger t;
  t.id = "o";
  t.source = source;
  t.scope = scope;
  t.actor = actor;
  t.human = human;
  t.addressed = addressed;
  t.threads = {"github:acme/widgets:issue:1"};
  t.channel = "github:acme/widgets:issue:1";
  return t;
}

Mandate MandateFor(const std::string& admission, Strength strength, const std::string& sender,
                   std::vector<std::string> rules = {}, const std::string& source = "github") {
  Mandate m;
  m.admission = admission;
  m.strength = strength;
  m.sender = sender;
  m.source = source;
  m.matched_rules = std::move(rules);
  return m;
}

TEST(Revalidate, ExplicitFollowUpNeedsNothingMore) {
  Mandate m = MandateFor("allow_listed_follow_up", Strength::kExplicit, "alice");
  EXPECT_EQ(RevalidateMandate(m, Origin("alice", true, false), MakePolicy("off", "people: [alice, bob]=>people: []")), "");
}

TEST(Revalidate, InferredNeedsAutoAndItsRulesStillEnabled) {
  Mandate m = MandateFor("cell:allowed_unaddressed", Strength::kInferred, "alice", {"wording"});
  Trigger o = Origin("alice", true, false);
  EXPECT_EQ(RevalidateMandate(m, o, MakePolicy("auto")), "");
  EXPECT_NE(RevalidateMandate(m, o, MakePolicy("observe")), "");
  EXPECT_NE(RevalidateMandate(m, o, MakePolicy("auto", "name: wording\n    enabled: true=>name: wording\n    enabled: false")), "");
}

TEST(Revalidate, AdmissionCellMustStillGiveTheOriginalStrength) {
  // A stranger @-mentioned the agent in a support chat whose cell says explicit.
  Mandate m = MandateFor("cell:others_addressed", Strength::kExplicit, "ou_guest", {}, "feishu");
  Trigger o = Origin("ou_guest", true, true, "feishu", "chat:oc_support");
  EXPECT_EQ(RevalidateMandate(m, o, MakePolicy("observe")), "");
  EXPECT_NE(RevalidateMandate(m, o, MakePolicy("observe", "others_addressed: explicit=>others_addressed: inferred")), "");
}

TEST(Revalidate, BotNeedsTheBotListAutoAndRules) {
  Mandate m = MandateFor("listed_bot", Strength::kInferred, "dependabot[bot]", {"wording"});
  Trigger o = Origin("dependabot[bot]", false, true);
  EXPECT_EQ(RevalidateMandate(m, o, MakePolicy("auto")), "");
  EXPECT_NE(RevalidateMandate(m, o, MakePolicy("observe")), "");
  EXPECT_NE(RevalidateMandate(m, o, MakePolicy("auto", "bots: [\"dependabot[bot]\"]=>bots: []")), "");
}

TEST(Revalidate, OtherwiseTheSenderMustStillBeAllowListed) {
  Mandate m = MandateFor("allow_listed_addressed", Strength::kExplicit, "alice");
  Trigger o = Origin("alice", true, true);
  EXPECT_EQ(RevalidateMandate(m, o, MakePolicy("off")), "") << "explicit works in every mode";
  EXPECT_EQ(RevalidateMandate(m, o, MakePolicy("observe", "people: [alice, bob]=>people: [bob]")),
            "requester is no longer allow-listed");
}

TEST(Revalidate, TheSourceMustStillListen) {
  Mandate m = MandateFor("allow_listed_addressed", Strength::kExplicit, "ou_alice", {}, "feishu");
  Trigger o = Origin("ou_alice", true, true, "feishu", "chat:oc_support");
  EXPECT_EQ(RevalidateMandate(m, o, MakePolicy("observe")), "");
  Policy no_feishu = MakePolicy("observe");
  no_feishu.sources.erase("feishu");
  EXPECT_NE(RevalidateMandate(m, o, no_feishu), "");
}

TEST(Revalidate, PanelMandatesStayValid) {
  Mandate m = MandateFor("panel_operator", Strength::kExplicit, "operator", {}, "panel");
  EXPECT_EQ(RevalidateMandate(m, Origin("operator", true, true, "panel", "panel"), DefaultPolicy()), "");
}

}  // namespace
}  // namespace superagent::testing
