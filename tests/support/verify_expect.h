// The verifier's results compared field for field (the host comparisons against each other, the
// device comparison against the host's): every count, both maxima, the first mismatch's index and
// its two values (NaN equal to NaN), and the summary text.
#pragma once

#include <cmath>
#include <string>

#include <gtest/gtest.h>

#include "autotune/verifier.h"

namespace ktune::testsupport {

inline void expectSameVerifyResult(const VerifyResult& a, const VerifyResult& b,
                                   const std::string& what) {
  EXPECT_EQ(a.ok, b.ok) << what;
  EXPECT_EQ(a.checked, b.checked) << what;
  EXPECT_EQ(a.mismatches, b.mismatches) << what;
  EXPECT_EQ(a.nans, b.nans) << what;
  EXPECT_EQ(a.max_abs_error, b.max_abs_error) << what;
  EXPECT_EQ(a.max_rel_error, b.max_rel_error) << what;
  EXPECT_EQ(a.first_bad, b.first_bad) << what;
  if (a.first_bad >= 0 && b.first_bad >= 0) {
    EXPECT_TRUE(a.first_bad_out == b.first_bad_out ||
                (std::isnan(a.first_bad_out) && std::isnan(b.first_bad_out))) << what;
    EXPECT_TRUE(a.first_bad_ref == b.first_bad_ref ||
                (std::isnan(a.first_bad_ref) && std::isnan(b.first_bad_ref))) << what;
  }
  EXPECT_EQ(a.summary(), b.summary()) << what;
}

}  // namespace ktune::testsupport
