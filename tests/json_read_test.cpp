// Checked JSON access: every wrong type, absence and unparsable input is a precise error value,
// never an exception (nlohmann's value()/get<> throw on exactly these inputs).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "superagent/catch_all.h"
#include "superagent/json_read.h"

namespace superagent::testing {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;
namespace jr = json_read;

const json kNotification = json::parse(R"({
  "id": "1",
  "repository": {"full_name": null, "owner": "x"},
  "subject": {"type": "Issue", "url": 5, "title": "修复 🐛"},
  "count": 18446744073709551615,
  "small": -3,
  "ratio": 1.5,
  "flag": true
})");

TEST(JsonReadTest, RequiredFieldsNameThePathWhatWasExpectedAndWhatCame) {
  // The very value that used to end the daemon at every start: value("full_name", "") on null.
  EXPECT_THROW((void)kNotification["repository"].value("full_name", ""), json::type_error);
  auto full_name = jr::String(kNotification, "repository.full_name");
  ASSERT_FALSE(full_name.ok());
  EXPECT_EQ(full_name.status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(full_name.status().message(), "field \"repository.full_name\": expected string, got null");
  EXPECT_EQ(jr::String(kNotification, "subject.url").status().message(),
            "field \"subject.url\": expected string, got integer");
  EXPECT_EQ(jr::String(kNotification, "subject.missing").status().message(), "field \"subject.missing\": missing");
  EXPECT_EQ(jr::String(kNotification, "nowhere.deep.key").status().message(), "field \"nowhere\": missing");
  EXPECT_EQ(jr::String(kNotification, "id.x").status().message(), "field \"id\": expected object, got string");
  EXPECT_EQ(jr::Int(kNotification, "ratio").status().message(), "field \"ratio\": expected integer, got number");
  EXPECT_EQ(jr::Bool(kNotification, "id").status().message(), "field \"id\": expected boolean, got string");
  EXPECT_EQ(jr::Array(kNotification, "subject").status().message(), "field \"subject\": expected array, got object");
  EXPECT_EQ(jr::Object(kNotification, "flag").status().message(), "field \"flag\": expected object, got boolean");
  EXPECT_EQ(jr::String(json::array({1, 2}), "a").status().message(), "expected an object, got array");

  EXPECT_EQ(*jr::String(kNotification, "subject.title"), "修复 🐛");
  EXPECT_EQ(*jr::String(kNotification, "subject.type"), "Issue");
  EXPECT_EQ(*jr::Int(kNotification, "small"), -3);
  EXPECT_TRUE(*jr::Bool(kNotification, "flag"));
  EXPECT_EQ((*jr::Object(kNotification, "repository"))->size(), 2u);
}

TEST(JsonReadTest, AnIntegerBeyondInt64IsRefusedNotWrapped) {
  EXPECT_EQ(jr::Int(kNotification, "count").status().message(), "field \"count\": integer out of range");
  EXPECT_EQ(jr::IntOr(kNotification, "count", 7), 7);
  EXPECT_EQ(*jr::Int(json{{"n", INT64_MIN}}, "n"), INT64_MIN);
}

TEST(JsonReadTest, OptionalFieldsTakeAbsenceAndNullAsTheFallbackButNotAnotherType) {
  EXPECT_EQ(*jr::OptString(kNotification, "repository.full_name", "none"), "none");  // null
  EXPECT_EQ(*jr::OptString(kNotification, "subject.absent", "none"), "none");
  EXPECT_EQ(jr::OptString(kNotification, "subject.url").status().message(),
            "field \"subject.url\": expected string, got integer");
  EXPECT_EQ(*jr::OptInt(kNotification, "absent", 9), 9);
  EXPECT_FALSE(jr::OptInt(kNotification, "id").ok());
  EXPECT_FALSE(jr::OptBool(kNotification, "small").ok());
  EXPECT_TRUE(*jr::OptBool(kNotification, "absent", true));
}

TEST(JsonReadTest, LenientReadsGiveTheFallbackForEveryWrongShape) {
  for (const json& j : {json(), json(5), json("text"), json::array(), json{{"k", nullptr}}, json{{"k", {1}}}}) {
    EXPECT_EQ(jr::StringOr(j, "k", "fb"), "fb") << j.dump();
    EXPECT_EQ(jr::IntOr(j, "k", 4), 4) << j.dump();
    EXPECT_TRUE(jr::BoolOr(j, "k", true)) << j.dump();
    EXPECT_EQ(jr::Find(j, "k.deeper"), nullptr) << j.dump();
  }
  EXPECT_EQ(jr::StringOr(kNotification, "subject.title"), "修复 🐛");
}

TEST(JsonReadTest, ParseNeverThrowsAndSaysWhatWasWrong) {
  EXPECT_EQ(jr::Parse("{\"a\":", "the arguments").status().message(), "the arguments: not valid JSON");
  EXPECT_EQ(jr::Parse("", "x").status().message(), "x: not valid JSON");
  EXPECT_FALSE(jr::Parse(std::string("{\"a\":\"\xff\xfe\"}")).ok());  // invalid UTF-8 inside a string
  EXPECT_FALSE(jr::Parse(std::string(200'000, '[')).ok());            // deep nesting: refused, no crash
  EXPECT_EQ(jr::ParseObject("[1]", "the body").status().message(), "the body: expected a JSON object, got array");
  EXPECT_EQ(jr::ParseObject("\"s\"", "the body").status().message(), "the body: expected a JSON object, got string");
  auto ok = jr::ParseObject(R"({"文字":"中文 😀"})");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*jr::String(*ok, "文字"), "中文 😀");
}

TEST(JsonReadTest, FieldsKeepsTheFirstMistakeWithWhatItWasReading) {
  json a = json::parse(R"({"path": 5, "content": null, "offset": "x"})");
  jr::Fields f(a, "write_file");
  EXPECT_EQ(f.String("path"), "");
  EXPECT_EQ(f.String("content"), "");  // after the first mistake: the fallback, the error stays
  EXPECT_EQ(f.OptInt("offset", 3), 3);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().message(), "write_file: field \"path\": expected string, got integer");

  const json array = json::array();
  jr::Fields not_object(array, "read_file");
  EXPECT_EQ(not_object.String("path"), "");
  EXPECT_EQ(not_object.status().message(), "read_file: expected a JSON object, got array");

  const json args = json::parse(R"({"path":"src/主.cpp","n":2})");
  jr::Fields good(args, "read_file");
  EXPECT_EQ(good.String("path"), "src/主.cpp");
  EXPECT_EQ(good.Int("n"), 2);
  EXPECT_EQ(good.OptString("absent", "d"), "d");
  EXPECT_FALSE(good.OptBool("absent"));
  EXPECT_TRUE(good.ok());
}

TEST(CatchAllTest, WhatIsThrownBecomesAStatusNamingWhere) {
  Status s = CatchAll("the effects loop", [] { (void)json::parse("{}").at("missing"); });
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), Status::Code::kInternal);
  EXPECT_THAT(s.message(), HasSubstr("unexpected error in the effects loop: "));
  EXPECT_THAT(s.message(), HasSubstr("key 'missing' not found"));
  EXPECT_EQ(CatchAll("x", [] { throw 42; }).message(), "unexpected error in x: an exception of unknown type");
  EXPECT_TRUE(CatchAll("x", [] {}).ok());
  EXPECT_EQ(CatchAll("x", [] { return Status::NotFound("n"); }).code(), Status::Code::kNotFound);
}

}  // namespace
}  // namespace superagent::testing
