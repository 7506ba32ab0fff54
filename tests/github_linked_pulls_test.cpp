// link_pull_requests against the loopback fake: one change across repositories, one pull request
// in each, and each one's body saying which others belong to it (GitHub's "owner/name#N" form,
// so GitHub itself links them both ways). The section is the daemon's; every other byte is not.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fake_github_server.h"
#include "sources/github/channel.h"
#include "superagent/github.h"
#include "superagent/text.h"

namespace superagent::github {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;
using superagent::testing::FakeGitHub;

const std::string kLinkedHead = "ec26c3e57ca3a959ca5aad62de7213c562f8c821";
// A person's words around the daemon's: Chinese, emoji (four bytes each), a CRLF line.
const std::string kLinkedBody = "修复登录页面的错误 🐛\r\n\r\nFixes #3 — 感谢 🎉👍🏽 naïve café";

// The section for Ticket 5 with `lines` ("- acme/web#7\n" each), as GitHub will show it.
std::string LinkedSection(const std::string& lines) {
  return "<!-- superagent:linked-pulls -->\n**One change across repositories** (Ticket #5), merged together:\n" + lines +
         "<!-- /superagent:linked-pulls -->";
}

int Occurrences(const std::string& s, const std::string& what) {
  int n = 0;
  for (auto p = s.find(what); p != std::string::npos; p = s.find(what, p + what.size())) ++n;
  return n;
}

class LinkPullRequestsTest : public ::testing::Test {
 protected:
  LinkPullRequestsTest() : fake_(&clock_), http_(MakeHttpClient("superagent-test")) {
    ClientOptions o;
    o.api_url = fake_.url();
    o.token = "t";
    client_ = std::make_unique<Client>(http_.get(), &clock_, [this](TimeMs ms) { clock_.Advance(ms); }, o);
    channel_ = std::make_unique<GitHubChannel>(client_.get(), "Codertocat/Hello-World");
    fake_.pulls[12] = fake_.MakePull(12, "superagent-bot", kLinkedBody, kLinkedHead, 3, 1);
    fake_.pulls[12]["html_url"] = "https://github.com/Codertocat/Hello-World/pull/12";
  }

  Effect Link(json links = json::array({{{"repo", "Codertocat/Hello-World"}, {"number", 12}},
                                         {{"repo", "acme/web"}, {"number", 7}}}),
              json overrides = json::object()) {
    Effect e;
    e.id = 21;
    e.kind = "link_pull_requests";
    e.payload = {{"channel", "github:codertocat/hello-world"}, {"idempotency_key", "links:ticket:5:12"},
                 {"ticket", 5}, {"number", 12}, {"links", links}};
    for (const auto& [k, v] : overrides.items()) e.payload[k] = v;
    return e;
  }
  std::string Body(std::int64_t number = 12) {
    auto lock = fake_.Lock();
    const json& b = fake_.pulls[number]["body"];
    return b.is_string() ? b.get<std::string>() : "<not text>";
  }
  void SetBody(const json& body, std::int64_t number = 12) {
    auto lock = fake_.Lock();
    fake_.pulls[number]["body"] = body;
  }
  int Patches() { return fake_.Count("PATCH", "/repos/Codertocat/Hello-World/pulls/"); }

  FakeClock clock_;
  FakeGitHub fake_;
  std::unique_ptr<HttpClient> http_;
  std::unique_ptr<Client> client_;
  std::unique_ptr<GitHubChannel> channel_;
};

TEST_F(LinkPullRequestsTest, AppendsTheSectionAndKeepsEveryOtherByte) {
  Delivery d = channel_->Perform(Link(), false);
  ASSERT_EQ(d.outcome, Delivery::Outcome::kDone) << d.error;
  EXPECT_EQ(d.external_id, "12");
  EXPECT_EQ(d.url, "https://github.com/Codertocat/Hello-World/pull/12");
  const std::string section = LinkedSection("- Codertocat/Hello-World#12\n- acme/web#7\n");
  EXPECT_EQ(Body(), kLinkedBody + "\n\n" + section);
  EXPECT_EQ(Body().compare(0, kLinkedBody.size(), kLinkedBody), 0) << "the person's bytes, unchanged";
  EXPECT_EQ(Patches(), 1);
  ASSERT_EQ(fake_.pull_body_edits[12].size(), 1u);
  EXPECT_EQ(fake_.pull_body_edits[12][0], Body());
  const auto log = fake_.log();
  EXPECT_EQ(log.back().method, "PATCH");
  EXPECT_EQ(log.back().target, "/repos/Codertocat/Hello-World/pulls/12");
  EXPECT_EQ(json::parse(log.back().body), (json{{"body", kLinkedBody + "\n\n" + section}})) << "only the body is sent";
  EXPECT_EQ(WithLinkedPulls(kLinkedBody, 5, {{"Codertocat/Hello-World", 12}, {"acme/web", 7}}), Body());
}

TEST_F(LinkPullRequestsTest, ARerunWithTheSameLinksSendsNothing) {
  ASSERT_EQ(channel_->Perform(Link(), false).outcome, Delivery::Outcome::kDone);
  const std::string once = Body();
  Delivery again = channel_->Perform(Link(), true);
  EXPECT_EQ(again.outcome, Delivery::Outcome::kDone) << again.error;
  EXPECT_EQ(again.external_id, "12");
  EXPECT_EQ(Patches(), 1) << "an unchanged body is not written again";
  EXPECT_EQ(Body(), once);
}

TEST_F(LinkPullRequestsTest, ChangedLinksReplaceTheOneSection) {
  ASSERT_EQ(channel_->Perform(Link(), false).outcome, Delivery::Outcome::kDone);
  // A person wrote on after the section; their words stay where they are.
  SetBody(Body() + "\n\nReviewed with 张伟 🙂");
  const json three = json::array({{{"repo", "acme/api"}, {"number", 40}},
                                   {{"repo", "Codertocat/Hello-World"}, {"number", 12}},
                                   {{"repo", "acme/web"}, {"number", 8}}});
  Delivery d = channel_->Perform(Link(three), false);
  ASSERT_EQ(d.outcome, Delivery::Outcome::kDone) << d.error;
  EXPECT_EQ(Body(), kLinkedBody + "\n\n" + LinkedSection("- acme/api#40\n- Codertocat/Hello-World#12\n- acme/web#8\n") +
                        "\n\nReviewed with 张伟 🙂");
  EXPECT_EQ(Occurrences(Body(), kLinkedPullsBegin), 1);
  EXPECT_EQ(Occurrences(Body(), kLinkedPullsEnd), 1);
  EXPECT_EQ(Occurrences(Body(), "acme/web#7"), 0);
  EXPECT_EQ(Patches(), 2);
}

TEST_F(LinkPullRequestsTest, ABeginMarkerWithoutAnEndIsASectionToTheEnd) {
  // An edit cut the section's end away: what follows the begin marker was the section.
  SetBody("Intro 介绍\n\n<!-- superagent:linked-pulls -->\n**One change**\n- stale/repo#1\nleft over");
  Delivery d = channel_->Perform(Link(json::array({{{"repo", "acme/web"}, {"number", 7}}})), false);
  ASSERT_EQ(d.outcome, Delivery::Outcome::kDone) << d.error;
  EXPECT_EQ(Body(), "Intro 介绍\n\n" + LinkedSection("- acme/web#7\n"));
  EXPECT_EQ(Occurrences(Body(), kLinkedPullsBegin), 1);
  // Now whole: the same links again change nothing.
  ASSERT_EQ(channel_->Perform(Link(json::array({{{"repo", "acme/web"}, {"number", 7}}})), false).outcome,
            Delivery::Outcome::kDone);
  EXPECT_EQ(Patches(), 1);
}

TEST_F(LinkPullRequestsTest, ANullOrEmptyBodyGetsTheSectionAlone) {
  SetBody(nullptr);
  ASSERT_EQ(channel_->Perform(Link(), false).outcome, Delivery::Outcome::kDone);
  EXPECT_EQ(Body(), LinkedSection("- Codertocat/Hello-World#12\n- acme/web#7\n"));
  SetBody("");
  ASSERT_EQ(channel_->Perform(Link(), false).outcome, Delivery::Outcome::kDone);
  EXPECT_EQ(Body(), LinkedSection("- Codertocat/Hello-World#12\n- acme/web#7\n"));
  // A body ending in a line break needs one more for the blank line, not two.
  SetBody("Done.\n");
  ASSERT_EQ(channel_->Perform(Link(), false).outcome, Delivery::Outcome::kDone);
  EXPECT_EQ(Body(), "Done.\n\n" + LinkedSection("- Codertocat/Hello-World#12\n- acme/web#7\n"));
}

TEST_F(LinkPullRequestsTest, GitHubsAnswersDecideTheOutcome) {
  // A pull request that is not there (deleted, or the repository gone) is Gone.
  Delivery gone = channel_->Perform(Link(json::array({{{"repo", "acme/web"}, {"number", 7}}}), {{"number", 404}}), false);
  EXPECT_EQ(gone.outcome, Delivery::Outcome::kTargetGone) << gone.error;
  // An outage on the read is retried (the client itself tries twice first).
  fake_.Script("GET", "/repos/Codertocat/Hello-World/pulls/12", {500, {}, R"({"message":"Server Error"})"}, 2);
  Delivery read_failed = channel_->Perform(Link(), false);
  EXPECT_EQ(read_failed.outcome, Delivery::Outcome::kRetry) << read_failed.error;
  EXPECT_EQ(Patches(), 0);
  // On the write: 500 is retried (the next attempt reads the body again), 422 is final.
  fake_.Script("PATCH", "/repos/Codertocat/Hello-World/pulls/12", {500, {}, R"({"message":"Server Error"})"});
  EXPECT_EQ(channel_->Perform(Link(), false).outcome, Delivery::Outcome::kRetry);
  fake_.Script("PATCH", "/repos/Codertocat/Hello-World/pulls/12",
               {422, {}, R"({"message":"Validation Failed","errors":[{"resource":"Issue","code":"custom","field":"body","message":"body is too long"}]})"});
  Delivery invalid = channel_->Perform(Link(), false);
  EXPECT_EQ(invalid.outcome, Delivery::Outcome::kFailed);
  EXPECT_THAT(invalid.error, HasSubstr("body is too long"));
  EXPECT_EQ(Body(), kLinkedBody) << "nothing written";
  // A 404 on the write (the PR went away in between) is Gone too.
  fake_.Script("PATCH", "/repos/Codertocat/Hello-World/pulls/12", {404, {}, R"({"message":"Not Found"})"});
  EXPECT_EQ(channel_->Perform(Link(), false).outcome, Delivery::Outcome::kTargetGone);
  // The unscripted write goes through.
  EXPECT_EQ(channel_->Perform(Link(), false).outcome, Delivery::Outcome::kDone);
  EXPECT_EQ(Patches(), 4);
}

TEST_F(LinkPullRequestsTest, AnAnswerWithoutABodyIsNeverWrittenOver) {
  // Writing the section over an answer that has no body would wipe the person's words.
  fake_.Script("GET", "/repos/Codertocat/Hello-World/pulls/12", {200, {}, R"({"number":12,"title":"t"})"});
  Delivery missing = channel_->Perform(Link(), false);
  EXPECT_EQ(missing.outcome, Delivery::Outcome::kFailed);
  EXPECT_EQ(missing.error, "linking pull request #12: GitHub's answer has no readable body (missing)");
  fake_.Script("GET", "/repos/Codertocat/Hello-World/pulls/12", {200, {}, R"({"number":12,"body":["x"]})"});
  Delivery wrong = channel_->Perform(Link(), false);
  EXPECT_EQ(wrong.outcome, Delivery::Outcome::kFailed);
  EXPECT_EQ(wrong.error, "linking pull request #12: GitHub's answer has no readable body (array)");
  fake_.Script("GET", "/repos/Codertocat/Hello-World/pulls/12", {200, {}, R"([1,2])"});
  EXPECT_EQ(channel_->Perform(Link(), false).outcome, Delivery::Outcome::kFailed);
  EXPECT_EQ(Patches(), 0);
  EXPECT_EQ(Body(), kLinkedBody);
}

TEST_F(LinkPullRequestsTest, HostilePayloadsFailPreciselyBeforeAnyRequest) {
  json eleven = json::array();
  for (int i = 1; i <= 11; ++i) eleven.push_back({{"repo", "acme/r" + std::to_string(i)}, {"number", i}});
  const json ok_link = {{"repo", "acme/web"}, {"number", 7}};
  const std::string huge(1 << 20, 'a');
  struct Case {
    json links;
    json overrides;
    std::string error;
  };
  const std::vector<Case> cases = {
      {json::array({ok_link}), {{"ticket", "5"}}, "link_pull_requests: field \"ticket\": expected integer, got string"},
      {json::array({ok_link}), {{"ticket", 0}}, "link_pull_requests: ticket and number must be positive"},
      {json::array({ok_link}), {{"number", 0}}, "link_pull_requests: ticket and number must be positive"},
      {json::array({ok_link}), {{"number", -12}}, "link_pull_requests: ticket and number must be positive"},
      {json::array({ok_link}), {{"number", 12.5}}, "link_pull_requests: field \"number\": expected integer, got number"},
      {json::array({ok_link}), {{"number", nullptr}}, "link_pull_requests: field \"number\": expected integer, got null"},
      {json::array({ok_link}), {{"number", 1e30}}, "link_pull_requests: field \"number\": expected integer, got number"},
      {ok_link, {}, "link_pull_requests: field \"links\": expected array, got object"},
      {"acme/web#7", {}, "link_pull_requests: field \"links\": expected array, got string"},
      {nullptr, {}, "link_pull_requests: field \"links\": expected array, got null"},
      {json::array(), {}, "link_pull_requests: links must have 1 to 10 entries; it has 0"},
      {eleven, {}, "link_pull_requests: links must have 1 to 10 entries; it has 11"},
      {json::array({"acme/web#7"}), {}, "link_pull_requests: links[0]: expected a JSON object, got string"},
      {json::array({ok_link, json::array({"acme/web", 7})}), {},
       "link_pull_requests: links[1]: expected a JSON object, got array"},
      {json::array({{{"number", 7}}}), {}, "link_pull_requests: links[0]: field \"repo\": missing"},
      {json::array({{{"repo", 5}, {"number", 7}}}), {},
       "link_pull_requests: links[0]: field \"repo\": expected string, got integer"},
      {json::array({{{"repo", "acme/web"}, {"number", "7"}}}), {},
       "link_pull_requests: links[0]: field \"number\": expected integer, got string"},
      {json::array({{{"repo", "../x"}, {"number", 7}}}), {},
       "link_pull_requests: links[0]: repo \"../x\" is not a repository name (owner/name)"},
      {json::array({ok_link, {{"repo", "acme"}, {"number", 7}}}), {},
       "link_pull_requests: links[1]: repo \"acme\" is not a repository name (owner/name)"},
      {json::array({{{"repo", "acme/web\n- evil/x#1"}, {"number", 7}}}), {},
       "link_pull_requests: links[0]: repo \"acme/web\n- evil/x#1\" is not a repository name (owner/name)"},
      {json::array({{{"repo", "acme/web -->"}, {"number", 7}}}), {},
       "link_pull_requests: links[0]: repo \"acme/web -->\" is not a repository name (owner/name)"},
      {json::array({{{"repo", "acme/" + huge}, {"number", 7}}}), {},
       "link_pull_requests: links[0]: repo \"" + text::Cut("acme/" + huge, 60) + "\" is not a repository name (owner/name)"},
      {json::array({ok_link, {{"repo", "acme/api"}, {"number", 0}}}), {},
       "link_pull_requests: links[1]: number must be positive"},
      {json::array({{{"repo", "acme/api"}, {"number", -3}}}), {}, "link_pull_requests: links[0]: number must be positive"},
      {json::array({{{"repo", "acme/api"}, {"number", 1e20}}}), {},
       "link_pull_requests: links[0]: field \"number\": expected integer, got number"},
  };
  for (const Case& c : cases) {
    Delivery d = channel_->Perform(Link(c.links, c.overrides), false);
    EXPECT_EQ(d.outcome, Delivery::Outcome::kFailed) << c.error;
    EXPECT_EQ(d.error, c.error);
    EXPECT_LT(d.error.size(), 300u);
  }
  Effect not_object = Link();
  not_object.payload = json::array({1, 2});
  Delivery d = channel_->Perform(not_object, false);
  EXPECT_EQ(d.outcome, Delivery::Outcome::kFailed);
  EXPECT_EQ(d.error, "link_pull_requests: expected a JSON object, got array");
  EXPECT_TRUE(fake_.log().empty()) << fake_.log().size() << " requests made";
  // Ten links is the most, and allowed.
  eleven.erase(eleven.end() - 1);
  EXPECT_EQ(channel_->Perform(Link(eleven), false).outcome, Delivery::Outcome::kDone);
}

TEST_F(LinkPullRequestsTest, ABodyThatWouldPassGitHubsLimitIsNotSent) {
  // Characters, not bytes: three-byte Chinese characters up to the limit with the section.
  const std::vector<PullLink> links = {{"Codertocat/Hello-World", 12}, {"acme/web", 7}};
  const std::size_t section = text::CountCodePoints(WithLinkedPulls("", 5, links));
  std::string fits;
  for (std::size_t i = 0; i + section + 2 < kMaxPullBodyChars; ++i) fits += "界";
  SetBody(fits);
  Delivery d = channel_->Perform(Link(), false);
  ASSERT_EQ(d.outcome, Delivery::Outcome::kDone) << d.error;
  EXPECT_EQ(text::CountCodePoints(Body()), kMaxPullBodyChars);
  EXPECT_EQ(Patches(), 1);
  // One character more would not fit: refused here, not by GitHub.
  SetBody(fits + "界");
  Delivery over = channel_->Perform(Link(), false);
  EXPECT_EQ(over.outcome, Delivery::Outcome::kFailed);
  EXPECT_EQ(over.error, "linking pull request #12: its body with the links would have 65537 characters, more than "
                        "GitHub's 65536");
  EXPECT_EQ(Patches(), 1);
  EXPECT_EQ(Body(), fits + "界");
}

}  // namespace
}  // namespace superagent::github
