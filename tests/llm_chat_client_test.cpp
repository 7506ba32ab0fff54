// The chat-completions client against a loopback server speaking the real wire format: request
// shape, forced tool choice, token accounting, retries with backoff, timeouts, refusals.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "app/wiring.h"
#include "fake_chat_server.h"
#include "superagent/llm.h"
#include "superagent/text.h"

namespace superagent::llm {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using superagent::testing::ChatReply;
using superagent::testing::FakeChatServer;
using json = nlohmann::json;

class ChatClientTest : public ::testing::Test {
 protected:
  // A client whose waits are recorded (and advance the fake clock) instead of slept.
  std::unique_ptr<OpenAiChatClient> Client(ChatOptions o = {}) {
    if (o.base_url.empty()) o.base_url = server_.base_url();
    if (o.api_key.empty()) o.api_key = server_.api_key();
    return std::make_unique<OpenAiChatClient>(o, http_.get(), &clock_, [this](TimeMs ms) {
      waits_.push_back(ms);
      clock_.Advance(ms);
    });
  }

  static ChatRequest Ask() {
    ChatRequest r;
    r.model = "deepseek-chat";
    r.purpose = "assessment";
    r.messages = {Message::System("You answer with decide."), Message::User("Is this a request?")};
    r.tools = {{"other_tool",
                "answer",
                {{"type", "object"},
                 {"properties", {{"decision", {{"type", "string"}}}}},
                 {"required", {"decision"}},
                 {"additionalProperties", false}}}};
    r.tool_choice = "other_tool";  // forced (the assessor's decide has its own tests)
    r.temperature = 0.0;
    r.max_tokens = 256;
    return r;
  }

  FakeChatServer server_;
  std::unique_ptr<HttpClient> http_ = MakeHttpClient("superagent-test");
  FakeClock clock_;
  std::vector<TimeMs> waits_;
};

TEST(ChatUrlTest, BaseWithOrWithoutV1AndSlashes) {
  EXPECT_EQ(ChatCompletionsUrl("https://api.deepseek.com"), "https://api.deepseek.com/chat/completions");
  EXPECT_EQ(ChatCompletionsUrl("https://api.deepseek.com/"), "https://api.deepseek.com/chat/completions");
  EXPECT_EQ(ChatCompletionsUrl("https://api.openai.com/v1"), "https://api.openai.com/v1/chat/completions");
  EXPECT_EQ(ChatCompletionsUrl("http://127.0.0.1:11434/v1/"), "http://127.0.0.1:11434/v1/chat/completions");
  EXPECT_EQ(ChatCompletionsUrl("https://x/v1/chat/completions"), "https://x/v1/chat/completions");
}

TEST(ChatWireTest, RequestBodyForcesTheNamedFunction) {
  ChatRequest r;
  r.model = "m";
  r.messages = {Message::System("s"), Message::User("u"),
                {"assistant", "", {{"call_1", "decide", "{}"}}, ""}, Message::Tool("call_1", "rejected")};
  r.tools = {{"decide", "d", {{"type", "object"}, {"properties", json::object()}}}};
  r.tool_choice = "decide";
  json j = ChatRequestToJson(r);
  EXPECT_EQ(j["tool_choice"], json::parse(R"({"type":"function","function":{"name":"decide"}})"));
  EXPECT_EQ(j["tools"][0]["type"], "function");
  EXPECT_EQ(j["tools"][0]["function"]["name"], "decide");
  EXPECT_TRUE(j["messages"][2]["content"].is_null()) << "a tool-calling assistant turn sends content null";
  EXPECT_EQ(j["messages"][2]["tool_calls"][0]["function"]["arguments"], "{}");
  EXPECT_EQ(j["messages"][3]["tool_call_id"], "call_1");
  EXPECT_EQ(j["stream"], false);
  EXPECT_FALSE(j.contains("temperature"));
  r.tool_choice = "required";
  EXPECT_EQ(ChatRequestToJson(r)["tool_choice"], "required");
  r.tool_choice = "";
  EXPECT_FALSE(ChatRequestToJson(r).contains("tool_choice"));
}

TEST_F(ChatClientTest, SendsTheWireFormatAndReadsToolCallsAndDeepSeekUsage) {
  server_.Push(server_.ToolCalls({{"other_tool", R"({"decision":"accept"})"}}, FakeChatServer::Usage(900, 40, 768)));
  auto r = Client()->Complete(Ask());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_THAT(server_.problems(), ::testing::IsEmpty());
  ASSERT_EQ(r->tool_calls.size(), 1u);
  EXPECT_EQ(r->tool_calls[0].name, "other_tool");
  EXPECT_EQ(json::parse(r->tool_calls[0].arguments)["decision"], "accept");
  EXPECT_FALSE(r->tool_calls[0].id.empty());
  EXPECT_EQ(r->finish_reason, "tool_calls");
  EXPECT_EQ(r->usage.prompt_tokens, 900);
  EXPECT_EQ(r->usage.completion_tokens, 40);
  EXPECT_EQ(r->usage.total_tokens, 940);
  EXPECT_EQ(r->usage.cache_hit_tokens, 768);
  EXPECT_EQ(r->usage.cache_miss_tokens, 132);
  EXPECT_EQ(r->usage.model, "deepseek-chat");
  EXPECT_EQ(r->usage.purpose, "assessment");
  EXPECT_EQ(r->usage.calls, 1);
  EXPECT_EQ(r->usage.http_attempts, 1);
  json u = r->usage.ToJson();
  EXPECT_EQ(u["cache_hit_tokens"], 768);
  EXPECT_FALSE(u.contains("reasoning_tokens"));

  auto sent = server_.requests();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0]["model"], "deepseek-chat");
  EXPECT_EQ(sent[0]["messages"][0]["role"], "system");
  EXPECT_EQ(sent[0]["messages"][1]["content"], "Is this a request?");
  EXPECT_EQ(sent[0]["tool_choice"]["function"]["name"], "other_tool");
  EXPECT_EQ(sent[0]["temperature"], 0.0);
  EXPECT_EQ(sent[0]["max_tokens"], 256);
}

TEST_F(ChatClientTest, OpenAiCachedTokensAreReadToo) {
  json usage = {{"prompt_tokens", 500},
                {"completion_tokens", 10},
                {"total_tokens", 510},
                {"prompt_tokens_details", {{"cached_tokens", 256}}},
                {"completion_tokens_details", {{"reasoning_tokens", 4}}}};
  server_.Push(server_.Text("plain answer", usage));
  auto r = Client()->Complete(Ask());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->content, "plain answer");
  EXPECT_TRUE(r->tool_calls.empty());
  EXPECT_EQ(r->usage.cache_hit_tokens, 256);
  EXPECT_FALSE(r->usage.cache_miss_tokens.has_value());
  EXPECT_EQ(r->usage.reasoning_tokens, 4);
}

TEST_F(ChatClientTest, BaseUrlWithoutV1Works) {
  FakeChatServer bare("sk-bare-0123456789", "");
  bare.Push(bare.Text("ok"));
  ChatOptions o;
  o.base_url = bare.base_url() + "/";
  o.api_key = bare.api_key();
  auto r = Client(o)->Complete(Ask());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_THAT(bare.problems(), ::testing::IsEmpty());
}

TEST_F(ChatClientTest, RateLimitIsRetriedAfterWhatRetryAfterAsks) {
  server_.Push(FakeChatServer::Error(429, "Rate limit reached", {{"Retry-After", "2"}}));
  server_.Push(server_.Text("ok"));
  auto r = Client()->Complete(Ask());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_THAT(waits_, ElementsAre(2000));
  EXPECT_EQ(r->usage.http_attempts, 2);
  EXPECT_EQ(r->usage.latency_ms, 2000) << "waits count as time spent";
  EXPECT_EQ(server_.requests().size(), 2u);
}

TEST_F(ChatClientTest, ServerErrorsBackOffExponentiallyThenGiveUp) {
  for (int i = 0; i < 4; ++i) server_.Push(FakeChatServer::Error(503, "Server overloaded"));
  ChatOptions o;
  o.max_retries = 3;
  o.backoff_initial_ms = 1000;
  o.max_retry_wait_ms = 3000;
  auto r = Client(o)->Complete(Ask());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kUnavailable);
  EXPECT_THAT(r.status().message(), HasSubstr("HTTP 503: Server overloaded"));
  EXPECT_THAT(r.status().message(), HasSubstr("after 4 attempts"));
  EXPECT_THAT(waits_, ElementsAre(1000, 2000, 3000)) << "doubling, capped at max_retry_wait_ms";
  EXPECT_EQ(server_.pending_replies(), 0u);
}

TEST_F(ChatClientTest, RetryAfterLongerThanAllowedFailsAtOnceForTheEvalBackoff) {
  server_.Push(FakeChatServer::Error(429, "slow down", {{"Retry-After", "3600"}}));
  auto r = Client()->Complete(Ask());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kUnavailable);
  EXPECT_THAT(r.status().message(), HasSubstr("retry after 3600 s"));
  EXPECT_TRUE(waits_.empty());
  EXPECT_EQ(server_.requests().size(), 1u);
}

TEST_F(ChatClientTest, RefusalsAreNotRetriedAndNeverEchoTheKey) {
  server_.Push(FakeChatServer::Error(401, "Incorrect API key provided: " + server_.api_key()));
  auto r = Client()->Complete(Ask());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("HTTP 401"));
  EXPECT_THAT(r.status().message(), Not(HasSubstr(server_.api_key())));
  EXPECT_THAT(r.status().message(), HasSubstr("***"));
  EXPECT_TRUE(waits_.empty());
  EXPECT_EQ(server_.requests().size(), 1u);
}

// A proxy's error page is not JSON and may be in any encoding (GBK here): it becomes part of a
// Status that is stored and shown, so it is cut by characters and repaired (it used to be cut by
// bytes and kept its invalid bytes, which json's dump() refuses).
TEST_F(ChatClientTest, AnErrorPageThatIsNotUtf8BecomesAValidBoundedMessage) {
  std::string page = "\xD6\xD0\xCE\xC4 gateway refused\n\xFF";
  for (int i = 0; i < 300; ++i) page += "错";
  server_.Push({403, page, {}, 0});
  auto r = Client()->Complete(Ask());
  ASSERT_FALSE(r.ok());
  const std::string m = r.status().message();
  EXPECT_THAT(m, HasSubstr("HTTP 403"));
  EXPECT_THAT(m, HasSubstr("\xEF\xBF\xBD gateway refused \xEF\xBF\xBD"));
  EXPECT_TRUE(text::IsValid(m));
  EXPECT_LT(text::CountCodePoints(m), 300u) << "the page is cut to 200 characters";
  EXPECT_NO_THROW((void)nlohmann::json(m).dump());
}

TEST_F(ChatClientTest, TimeoutIsUnavailableAndNotRepeated) {
  ChatReply slow = server_.Text("too late");
  slow.delay_ms = 100;  // the whole test stays well under 200 ms of real time
  server_.Push(slow);
  ChatOptions o;
  o.timeout_ms = 25;
  auto r = Client(o)->Complete(Ask());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kUnavailable);
  EXPECT_THAT(r.status().message(), HasSubstr("timed out"));
  EXPECT_TRUE(waits_.empty());
}

TEST_F(ChatClientTest, ConnectionFailuresAreRetried) {
  ChatOptions o;
  o.base_url = "http://127.0.0.1:1/v1";  // nothing listens on port 1
  o.max_retries = 2;
  auto r = Client(o)->Complete(Ask());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kUnavailable);
  EXPECT_THAT(r.status().message(), HasSubstr("connection failed"));
  EXPECT_THAT(waits_, ElementsAre(1000, 2000));
}

TEST_F(ChatClientTest, NoAttemptOrWaitPastTheDeadline) {
  ChatRequest req = Ask();
  req.deadline_ms = clock_.NowMs();
  auto r = Client()->Complete(req);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("out of time"));
  EXPECT_TRUE(server_.requests().empty());

  // A retry whose wait would pass the deadline is not begun.
  server_.Push(FakeChatServer::Error(500, "boom"));
  req.deadline_ms = clock_.NowMs() + 500;
  r = Client()->Complete(req);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("no time left"));
  EXPECT_TRUE(waits_.empty());
}

TEST_F(ChatClientTest, UnreadableSuccessIsUnavailable) {
  server_.Push({200, "{\"choices\": []}", {}, 0});
  auto r = Client()->Complete(Ask());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kUnavailable);
  EXPECT_THAT(r.status().message(), HasSubstr("no choices"));
}

TEST_F(ChatClientTest, InvalidUtf8InMessagesIsReplacedNotThrown) {
  server_.Push(server_.Text("ok"));
  ChatRequest req = Ask();
  req.messages[1].content = std::string("cut in the middle of \xE4\xBD");
  auto r = Client()->Complete(req);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_THAT(server_.problems(), ::testing::IsEmpty());
}

TEST(RetryAfterTest, SecondsMillisecondsAndHttpDates) {
  HttpResponse r;
  EXPECT_FALSE(RetryAfterMs(r, 0).has_value());
  r.headers["retry-after"] = "7";
  EXPECT_EQ(RetryAfterMs(r, 0), 7000);
  r.headers["retry-after-ms"] = "1500";
  EXPECT_EQ(RetryAfterMs(r, 0), 1500) << "OpenAI's millisecond header is more precise";
  r.headers.erase("retry-after-ms");
  r.headers["retry-after"] = "Thu, 01 Jan 2026 00:00:30 GMT";
  EXPECT_EQ(RetryAfterMs(r, 1'767'225'600'000), 30'000);
  r.headers["retry-after"] = "soon";
  EXPECT_FALSE(RetryAfterMs(r, 0).has_value());
}

TEST(ParseChatResponseTest, MalformedBodiesAreNamed) {
  EXPECT_THAT(ParseChatResponse("not json").status().message(), HasSubstr("not a JSON object"));
  EXPECT_THAT(ParseChatResponse(R"({"choices":[{}]})").status().message(), HasSubstr("no message"));
  // Some compatible servers send arguments as an object: read it as its JSON text.
  auto r = ParseChatResponse(
      R"({"choices":[{"message":{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"decide","arguments":{"x":1}}}]}}]})");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->tool_calls[0].arguments, R"({"x":1})");
  EXPECT_EQ(r->usage.prompt_tokens, 0);
}

TEST(UsageTest, AddSumsAndKeepsUnknownCountersUnset) {
  Usage a, b;
  a.prompt_tokens = 10;
  a.calls = 1;
  b.prompt_tokens = 5;
  b.calls = 1;
  b.cache_hit_tokens = 3;
  a.Add(b);
  EXPECT_EQ(a.prompt_tokens, 15);
  EXPECT_EQ(a.calls, 2);
  EXPECT_EQ(a.cache_hit_tokens, 3);
  EXPECT_FALSE(a.reasoning_tokens.has_value());
}

TEST(ChatOptionsTest, FromConfigReadsTheKeyFromTheNamedVariable) {
  Config c = DefaultConfig();
  c.llm.api_key_env = "SUPERAGENT_TEST_LLM_KEY_OPTIONS";
  c.llm.timeout_seconds = 7;
  c.llm.max_retries = 1;
  c.llm.max_retry_wait_seconds = 4;
  ::setenv("SUPERAGENT_TEST_LLM_KEY_OPTIONS", "sk-from-env-123456", 1);
  ChatOptions o = app::ChatOptionsFor(c);
  ::unsetenv("SUPERAGENT_TEST_LLM_KEY_OPTIONS");
  EXPECT_EQ(o.api_key, "sk-from-env-123456");
  EXPECT_EQ(o.base_url, "https://api.deepseek.com");
  EXPECT_EQ(o.timeout_ms, 7000);
  EXPECT_EQ(o.max_retries, 1);
  EXPECT_EQ(o.max_retry_wait_ms, 4000);
}

}  // namespace
}  // namespace superagent::llm
