// The backend module loader, from a program that links only the core (as the sqlock command
// does): the build tree's modules (SQLOCK_TEST_MODULE_DIR) serve their schemes on first use,
// registered_schemes() lists what can be loaded, and a scheme without a module, a module that
// is not a shared object, one without the entry point or one of another sqlock version are
// config_errors naming the file.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <fstream>

#include "sqlock/client.hpp"
#include "sqlock/errors.hpp"
#include "sqlock/version.hpp"
#include "test_env.hpp"

namespace sqlock::test {
namespace {

class modules : public ::testing::Test {
 protected:
  void SetUp() override { ::setenv("SQLOCK_BACKEND_PATH", SQLOCK_TEST_MODULE_DIR, 1); }
  void TearDown() override { ::unsetenv("SQLOCK_BACKEND_PATH"); }
  temp_dir tmp_;
};

bool has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

TEST_F(modules, a_scheme_loads_its_module_on_first_use) {
  auto schemes = registered_schemes();
  EXPECT_TRUE(has(schemes, "memory"));
  EXPECT_TRUE(has(schemes, "sqlite")) << "the SQLite module is loadable";
  auto c = sqlock::connect("sqlite:" + (tmp_.path / "m.db").string());
  EXPECT_EQ(c.get_backend().kind(), "sqlite");
  auto l = c.make_lock(unique_name("module"));
  EXPECT_TRUE(l.try_lock());
  EXPECT_EQ(l.fence(), 1u);
  l.unlock();
}

TEST_F(modules, a_scheme_without_a_module_names_where_it_looked) {
  try {
    make_backend("nosuch://u:Secret1@h/x");
    FAIL() << "an unknown scheme was accepted";
  } catch (const config_error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("libsqlock-backend-nosuch.so"), std::string::npos) << m;
    EXPECT_NE(m.find(SQLOCK_TEST_MODULE_DIR), std::string::npos) << m;
    EXPECT_EQ(m.find("Secret1"), std::string::npos) << m;
  }
}

TEST_F(modules, a_broken_module_is_a_config_error_naming_it) {
  ::setenv("SQLOCK_BACKEND_PATH", tmp_.path.c_str(), 1);
  std::ofstream(tmp_.path / "libsqlock-backend-broken.so") << "not a shared object";
  try {
    make_backend("broken:x");
    FAIL() << "a broken module was accepted";
  } catch (const config_error& e) {
    EXPECT_NE(std::string(e.what()).find("libsqlock-backend-broken.so"), std::string::npos)
        << e.what();
  }
}

TEST_F(modules, a_module_of_another_version_is_refused_naming_both_versions) {
  ::setenv("SQLOCK_BACKEND_PATH", SQLOCK_TEST_OTHER_VERSION_DIR, 1);
  for (int i = 0; i < 2; ++i) {  // refused the same way on a later use
    try {
      make_backend("otherversion:x");
      FAIL() << "a module of sqlock 0.0.1 was loaded by sqlock " SQLOCK_VERSION_STRING;
    } catch (const config_error& e) {
      std::string m = e.what();
      EXPECT_NE(m.find("libsqlock-backend-otherversion.so was built for sqlock 0.0.1"),
                std::string::npos)
          << m;
      EXPECT_NE(m.find("this library is sqlock " SQLOCK_VERSION_STRING), std::string::npos) << m;
    }
  }
  EXPECT_FALSE(has(registered_schemes(), "otherversion")) << "its entry point ran";
}

}  // namespace
}  // namespace sqlock::test
