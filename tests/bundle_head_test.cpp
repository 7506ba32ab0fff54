// BundleHead reads the tip a worker's bundle names for HEAD, so TakeCommits need not ask git
// again after the fetch. The bundle is the worker's bytes: real bundles git made, and headers a
// hostile worker could write instead.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "exec/workspace_internal.h"
#include "exec_fixture.h"

namespace superagent::testing {
namespace {

using exec::workspace_internal::BundleHead;

std::string ReadAll(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

using BundleHeadTest = EngineTest;  // for its scratch directory, dir_

TEST_F(BundleHeadTest, ReadsTheTipOfRealBundlesWithAndWithoutPrerequisites) {
  const std::string repo = (dir_ / "r").string();
  Sh("git init -q -b main " + repo + " && cd " + repo +
     " && printf 'one\\n' > a.txt && git add a.txt && git -c user.name=t -c user.email=t@t commit -q -m one"
     " && printf '二 🚀\\n' > a.txt && git -c user.name=t -c user.email=t@t commit -q -am two"
     " && git bundle create -q ../whole.bundle HEAD && git bundle create -q ../tail.bundle HEAD ^HEAD~1");
  const std::string head = text::Trim(Sh("git -C " + repo + " rev-parse HEAD"));
  ASSERT_EQ(head.size(), 40u);
  EXPECT_EQ(BundleHead(ReadAll(dir_ / "whole.bundle")), head);
  EXPECT_EQ(BundleHead(ReadAll(dir_ / "tail.bundle")), head) << "after a prerequisite line";
}

TEST_F(BundleHeadTest, AHeaderThatDoesNotNameHeadPlainlyGivesNothing) {
  const std::string id(40, 'a');
  EXPECT_EQ(BundleHead("# v2 git bundle\n" + id + " HEAD\n\nPACK"), id);
  EXPECT_EQ(BundleHead("# v3 git bundle\n@object-format=sha1\n" + id + " HEAD\n\nPACK"), id);
  EXPECT_EQ(BundleHead("# v2 git bundle\n" + std::string(64, 'b') + " HEAD\n\n"), std::string(64, 'b'));
  for (const std::string& bad : std::vector<std::string>{
           "",
           "PACK",
           "# v9 git bundle\n" + id + " HEAD\n\n",              // an unknown version
           "# v2 git bundle\n" + id + " refs/heads/main\n\n",   // no HEAD
           "# v2 git bundle\n\n" + id + " HEAD\n",              // HEAD after the header ended
           "# v2 git bundle\n" + std::string(40, 'A') + " HEAD\n\n",  // upper case
           "# v2 git bundle\n" + std::string(39, 'a') + " HEAD\n\n",  // short
           "# v2 git bundle\n" + std::string(40, 'g') + " HEAD\n\n",  // not hex
           "# v2 git bundle\n" + id + " HEAD \n\n",             // a trailing space
           "# v2 git bundle\n" + id + "  HEAD\n\n",             // two spaces
           "# v2 git bundle\n" + id + " HEAD",                  // cut before its newline
           std::string("# v2 git bundle\n提交 HEAD\n\n"),        // Chinese
           std::string("# v2 git bundle\n\xff\xfe HEAD\n\n"),   // invalid UTF-8
           "# v2 git bundle\n" + std::string(2'000'000, 'x'),   // a huge line without an end
       })
    EXPECT_EQ(BundleHead(bad), "") << bad.substr(0, 80);
  EXPECT_EQ(BundleHead(std::string("# v2 git bundle\n") + std::string(1, '\0') + " HEAD\n\n"), "");
}

}  // namespace
}  // namespace superagent::testing
