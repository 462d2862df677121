"""A local run priced as the CPU it ran on: the cheapest priced family documented to run it, else the default."""

from cpustudy import prices

ZEN4 = {"cpu_model": "AMD EPYC", "cpu_vendor": "AuthenticAMD", "arch": "x86_64", "extra": {"family": 25, "model": 17}}


def _catalog():
    return prices.Catalog.load(sky=False)  # the shipped rows only: the same answer on every machine


def test_a_zen_4_run_is_priced_as_a_zen_4_family_and_says_so():
    price, note = prices.own_family(_catalog(), ZEN4, 2, None, spot=True)
    assert price is not None and price.name == "aws:c7a.large"
    assert price.vcpus == 2 and "Genoa" in note and "gcp:c3d-highcpu" in note and "aws:c7a" in note
    assert "CPUID family 25 model 17" in note  # how the CPU was recognised
    one, note1 = prices.own_family(_catalog(), ZEN4, 1, None, spot=True)
    assert one is not None and one.vcpus >= 1 and ("next larger" in note1 or one.vcpus == 1)


def test_the_cheapest_priced_family_of_the_cpu_is_chosen():
    zen5 = {**ZEN4, "extra": {"family": 26, "model": 2}}
    catalog = _catalog()
    price, note = prices.own_family(catalog, zen5, 2, None, spot=True)
    assert price is not None and "Turin" in note
    rates = [prices.quote(p, spot=True) for f in ("gcp:c4d-highcpu", "aws:c8a") for p in
             [_try(catalog, f)] if p is not None]
    assert prices.quote(price, spot=True).usd_per_hour == min(q.usd_per_hour for q in rates if q is not None)


def _try(catalog, family):
    try:
        return catalog.cpu_instance(family, 2)[0]
    except Exception:
        return None


def test_an_unknown_cpu_is_priced_as_the_default_family_and_says_why():
    price, note = prices.own_family(_catalog(), {"cpu_model": "Mystery CPU", "cpu_vendor": "Nobody"}, 2, None, True)
    assert price is not None and price.name.startswith(prices.DEFAULT_FAMILY.split(":")[0])
    assert "no cloud family known to run this CPU" in note and prices.DEFAULT_FAMILY in note


def test_a_stored_runs_machine_record_is_read():
    import json

    info = prices.machine_of({"machine_info": json.dumps(ZEN4), "cpu_model": "ignored"})
    assert info["extra"] == {"family": 25, "model": 17} and info["cpu_model"] == "AMD EPYC"
    assert prices.machine_of({"cpu_model": "X", "machine_info": "not json"}) == {"cpu_model": "X"}


def test_every_vcpu_count_of_a_zen_3_machine_is_priced_in_its_own_family_even_where_a_size_has_no_spot_rate():
    """A 2-core Zen 3 (Milan) VM: the shipped catalog has t2d-standard-1 without a spot rate. Its 1-vCPU runs were priced
    as the default family's n2-highcpu-2 (Ice Lake, 0.02345 USD/h) and its 2-vCPU runs as t2d-standard-2 (0.01605):
    2 vCPUs came out cheaper by the hour than 1, a finding of the prices, not the runs. Now a size without a rate on the
    basis is passed over for the next larger of the same family, said so."""
    zen3 = {**ZEN4, "extra": {"family": 25, "model": 1}, "threads_per_core": 1}
    catalog = _catalog()
    one, note = prices.own_family(catalog, zen3, 1, None, spot=True)
    two, _ = prices.own_family(catalog, zen3, 2, None, spot=True)
    assert one is not None and two is not None and one.family == two.family == "t2d-standard"
    assert "no spot price for t2d-standard-1 in the catalog: priced as the next larger with one" in note
    assert prices.own_family(catalog, zen3, 1, None, spot=False)[0].instance_type == "t2d-standard-1"  # on-demand: its own
