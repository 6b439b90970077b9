/* The single runner of every module's Check suite. */
#include "config.h"
#include <stdlib.h>
#include "tests/check_suites.h"

int main(void)
{
	SRunner *sr = srunner_create(conf_suite());
	int failed;

	srunner_add_suite(sr, crc32c_suite());
	srunner_add_suite(sr, chap_suite());
	srunner_add_suite(sr, params_suite());
	srunner_add_suite(sr, pdu_suite());
	srunner_add_suite(sr, scsi_suite());
	srunner_add_suite(sr, vaai_suite());
	srunner_add_suite(sr, pr_suite());
	srunner_add_suite(sr, backstore_suite());
	srunner_add_suite(sr, stats_suite());
	srunner_add_suite(sr, iscsi_name_suite());
	srunner_add_suite(sr, login_suite());
	srunner_add_suite(sr, pr_file_suite());
	srunner_add_suite(sr, taskset_suite());
	srunner_add_suite(sr, iscsi_cmdsn_suite());
	srunner_add_suite(sr, iscsi_reader_suite());
	srunner_add_suite(sr, iscsi_dataout_suite());
	srunner_add_suite(sr, iscsi_tmf_suite());
	srunner_add_suite(sr, limits_suite());
	srunner_add_suite(sr, atomic_suite());
	srunner_add_suite(sr, histo_suite());
	srunner_add_suite(sr, space_suite());
	srunner_add_suite(sr, log_suite());
	srunner_add_suite(sr, fault_suite());
	srunner_add_suite(sr, caw_native_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
