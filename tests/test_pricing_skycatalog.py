"""Prices from SkyPilot's catalog (cpustudy.prices.sky): small vms.csv files in SkyPilot's v8
format, written here (SkyPilot's own catalog carries no licence and is never copied), read as price rows,
merged into the catalog between the shipped rows and a user's price file, and listed by `cpustudy prices`."""

from __future__ import annotations

import csv
import io
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cpustudy import prices as pricing
from cpustudy.prices import sky as skycatalog

GCP_HEADER = ("InstanceType,vCPUs,MemoryGiB,AcceleratorName,AcceleratorCount,GpuInfo,Region,AvailabilityZone,"
              "Price,SpotPrice")
AWS_HEADER = ("InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price,SpotPrice,Region,"
              "AvailabilityZone,Arch,LocalDiskType,NVMeSupported,LocalDiskSize,LocalDiskCount,MaximumEfaInterfaces")
H100_INFO = "\"{'Gpus': [{'Name': 'H100', 'Manufacturer': 'NVIDIA', 'Count': 1, 'MemoryInfo': {'SizeInMiB': 81920}}]}\""
T4_INFO = "\"{'Gpus': [{'Name': 'T4', 'Count': 1, 'MemoryInfo': {'SizeInMiB': 16384}}]}\""

GCP_ROWS = [
    # n2-highcpu-8: three zones; the lowest spot is in us-central1-c
    "n2-highcpu-8,8.0,8.0,,,,us-central1,us-central1-a,0.28684,0.09379",
    "n2-highcpu-8,8.0,8.0,,,,us-central1,us-central1-b,0.28684,0.1012",
    "n2-highcpu-8,8.0,8.0,,,,us-central1,us-central1-c,0.28684,0.0811",
    "n2-highcpu-8,8.0,8.0,,,,europe-west4,europe-west4-a,0.3154,0.1032",
    "n2-highcpu-16,16.0,16.0,,,,us-central1,us-central1-a,0.57368,0.18758",
    # a new family the shipped catalog lacks, listed first in a cheaper region than the default one
    "c4-highcpu-8,8.0,16.0,,,,asia-east1,asia-east1-a,0.3511,0.1201",
    "c4-highcpu-8,8.0,16.0,,,,us-central1,us-central1-a,0.3827,0.1421",
    # a3-highgpu-1g: the VM row is the host only; its H100 is a row of its own
    "a3-highgpu-1g,26.0,234.0,,,,us-central1,us-central1-a,1.18251,0.36117",
    f",,,H100,1,{H100_INFO},us-central1,us-central1-a,4.20076,2.9926",
    "a3-highgpu-1g,26.0,234.0,,,,us-central1,us-central1-b,1.18251,0.30117",  # cheaper host, no H100 in b
    # n1-standard-4 with one T4 attached
    "n1-standard-4,4.0,15.0,,,,us-central1,us-central1-a,0.189999,0.04",
    "n1-standard-8,8.0,30.0,,,,us-central1,us-central1-a,0.38,0.1",  # and n1-standard-8 with one
    f",,,T4,1,{T4_INFO},us-central1,us-central1-a,0.35,0.14",
    # anomalies
    "n2-highcpu-32,32.0,32.0,,,,us-central1,us-central1-a,1.14736,1.5",  # spot above on-demand
    "n2-highcpu-64,64.0,64.0,,,,us-central1,us-central1-a,99999,99999",  # placeholder
    "n2-highcpu-64,64.0,64.0,,,,us-central1,us-central1-b,2.29472,0.75034",  # its other zone is fine
    "e2-custom,,4.0,,,,us-central1,us-central1-a,0.1,0.03",  # no vCPUs
    "n2-highcpu-4,4.0,4.0,,,,us-central1,us-central1-a,abc,0.04",  # not a number
    "n2-highcpu-2,2.0,2.0,,,,us-central1,us-central1-a,0.0717,",  # no spot: on-demand only
]

AWS_ROWS = [
    "c7i.2xlarge,,,8.0,16.0,,0.357,0.1402,us-east-1,use1-az1,x86_64,,,,,",
    "c7i.2xlarge,,,8.0,16.0,,0.357,0.1288,us-east-1,use1-az4,x86_64,,,,,",
    "c7i.2xlarge,,,8.0,16.0,,0.357,,us-east-1,use1-az6,x86_64,,,,,",
    "c7i.2xlarge,,,8.0,16.0,,0.357,0.0545,us-east-1,use1-atl2-az1,x86_64,,,,,",  # Atlanta Local Zone: not the region
    "g6.xlarge,L4,1.0,4.0,16.0,\"{'Gpus': [{'Name': 'L4', 'Count': 1}]}\",0.8048,0.3211,us-east-1,use1-az2,"
    "x86_64,,,,,",
    "p5.48xlarge,H100,8.0,192.0,2048.0,,55.04,,us-east-1,use1-az1,x86_64,,,,,",
    "c7i.large,,,2.0,4.0,,0,0,us-east-1,use1-az1,x86_64,,,,,",  # zero: not a price
]


def write_catalog(root: Path, cloud: str, header: str, rows: list[str], mtime: str = "2026-11-22 12:00") -> Path:
    path = root / cloud / "vms.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join([header, *rows]) + "\n")
    stamp = time.mktime(time.strptime(mtime, "%Y-%m-%d %H:%M"))
    os.utime(path, (stamp, stamp))
    return path


@pytest.fixture
def sky_root(tmp_path, monkeypatch) -> Path:
    """A SkyPilot runtime folder with small gcp and aws catalogs, found the way SkyPilot finds it."""
    monkeypatch.setenv("SKY_RUNTIME_DIR", str(tmp_path / "runtime"))
    root = skycatalog.catalog_root()
    assert root == tmp_path / "runtime" / ".sky" / "catalogs" / "v8"
    write_catalog(root, "gcp", GCP_HEADER, GCP_ROWS)
    write_catalog(root, "aws", AWS_HEADER, AWS_ROWS)
    return root


def by_key(rows: list[pricing.Price]) -> dict[tuple[str, str], pricing.Price]:
    return {(r.instance_type, r.region): r for r in rows}


def test_catalog_root_follows_sky_runtime_dir_then_home(monkeypatch, tmp_path):
    monkeypatch.setenv("SKY_RUNTIME_DIR", str(tmp_path / "rt"))
    assert skycatalog.catalog_root() == tmp_path / "rt" / ".sky" / "catalogs" / "v8"
    monkeypatch.delenv("SKY_RUNTIME_DIR")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert skycatalog.catalog_root() == tmp_path / "home" / ".sky" / "catalogs" / "v8"
    assert skycatalog.shown(skycatalog.catalog_path("gcp")) == "~/.sky/catalogs/v8/gcp/vms.csv"
    assert skycatalog.read("gcp") is None and skycatalog.read("aws", tmp_path / "nowhere") is None


def test_gcp_vm_and_gpu_rows_are_summed_and_the_lowest_spot_zone_is_chosen(sky_root):
    gcp = skycatalog.read("gcp")
    assert gcp is not None and gcp.as_of == "2026-11-22" and gcp.cloud == "gcp"
    rows = by_key(gcp.rows)
    h100 = rows[("a3-highgpu-1g", "us-central1")]
    # VM + GPU of the same zone: us-central1-b has a cheaper host but no H100, so it does not count
    assert h100.spot == 3.35377 and h100.spot == pytest.approx(0.36117 + 2.9926)
    assert h100.on_demand == pytest.approx(1.18251 + 4.20076)
    assert (h100.accelerator, h100.accelerator_count, h100.vcpus, h100.zone) == ("H100", 1, 26, "us-central1-a")
    assert h100.family == "a3-highgpu" and h100.origin == "skypilot" and h100.as_of == "2026-11-22"
    assert h100.source.startswith("SkyPilot catalog ") and "gcp/vms.csv (zone us-central1-a" in h100.source
    t4 = rows[("n1-standard-4+1xT4", "us-central1")]
    assert (t4.accelerator, t4.spot, t4.on_demand) == ("T4", pytest.approx(0.18), pytest.approx(0.539999))
    assert rows[("n1-standard-4", "us-central1")].accelerator == ""  # the VM alone stays a CPU instance
    t4 = rows[("n1-standard-8+1xT4", "us-central1")]
    assert (t4.vcpus, t4.accelerator_count, t4.spot, t4.on_demand) == (8, 1, pytest.approx(0.24), pytest.approx(0.73))
    n2 = rows[("n2-highcpu-8", "us-central1")]
    assert (n2.spot, n2.on_demand, n2.zone) == (0.0811, 0.28684, "us-central1-c")
    assert n2.source.endswith("gcp/vms.csv (zone us-central1-c)")
    assert rows[("n2-highcpu-8", "europe-west4")].spot == 0.1032  # one row per region
    two = rows[("n2-highcpu-2", "us-central1")]
    assert two.spot is None and two.on_demand == 0.0717 and "no spot price" in two.source
    assert ("a3-highgpu-1g", "us-central1") in rows and not [r for r in gcp.rows if r.instance_type == "a3-highgpu-1g"
                                                             and not r.accelerator]


def test_anomalies_are_rejected_with_a_reason(sky_root):
    gcp = skycatalog.read("gcp")
    rows = by_key(gcp.rows)
    assert ("n2-highcpu-32", "us-central1") not in rows
    assert rows[("n2-highcpu-64", "us-central1")].spot == 0.75034  # the placeholder zone is left out
    assert ("e2-custom", "us-central1") not in rows and ("n2-highcpu-4", "us-central1") not in rows
    reasons = "\n".join(gcp.rejected)
    assert len(gcp.rejected) == 4, reasons
    assert "n2-highcpu-32 in us-central1: zone us-central1-a: spot 1.5 above on-demand 1.14736; left out" in reasons
    assert "n2-highcpu-64 in us-central1: zone us-central1-a: price 99999 USD/h looks like a placeholder; " \
           "partly kept" in reasons
    assert "e2-custom in us-central1: vCPUs missing" in reasons
    assert "n2-highcpu-4 in us-central1: zone us-central1-a: price 'abc' is not a number" in reasons
    aws = skycatalog.read("aws")
    assert [r for r in aws.rejected if "c7i.large" in r and "price '0' must be greater than zero" in r]


def test_aws_rows_carry_the_whole_price_and_accelerators(sky_root):
    aws = skycatalog.read("aws")
    rows = by_key(aws.rows)
    c7i = rows[("c7i.2xlarge", "us-east-1")]
    assert (c7i.spot, c7i.on_demand, c7i.zone, c7i.family) == (0.1288, 0.357, "use1-az4", "c7i")  # not atl2's
    assert not [r for r in aws.rejected if "atl2" in r]  # a Local Zone is no anomaly, just not the region
    g6 = rows[("g6.xlarge", "us-east-1")]
    assert (g6.accelerator, g6.accelerator_count, g6.on_demand, g6.spot) == ("L4", 1, 0.8048, 0.3211)
    p5 = rows[("p5.48xlarge", "us-east-1")]
    assert (p5.accelerator, p5.accelerator_count, p5.spot, p5.zone) == ("H100", 8, None, "")


def test_skypilot_rows_replace_shipped_ones_and_a_price_file_wins_over_both(sky_root, tmp_path):
    shipped = pricing.Catalog.load(sky=False)
    assert shipped.sky_sources == [] and shipped.sky_missing == [] and shipped.sky_sentence() == ""
    cat = pricing.Catalog.load()
    assert [s.cloud for s in cat.sky_sources] == ["gcp", "aws"] and cat.sky_missing == []
    assert cat.sky_sentence() == "prices from SkyPilot's gcp catalog (2026-11-22), SkyPilot's aws catalog (2026-11-22)"
    n2 = cat.instance("gcp:n2-highcpu-8")  # default region us-central1, although europe-west4 is listed too
    assert (n2.spot, n2.origin, n2.region) == (0.0811, "skypilot", "us-central1")
    assert cat.instance("gcp:n2-highcpu-8", "europe-west4").spot == 0.1032
    assert cat.row("gcp", "n2-highcpu-8", "europe-west4").zone == "europe-west4-a"
    assert cat.row("gcp", "n2-highcpu-8", "asia-east1") is None
    assert len([r for r in cat.rows if r.key == ("gcp", "n2-highcpu-8", "us-central1")]) == 1
    # shipped rows SkyPilot has no figure for stay
    assert cat.instance("gcp:n2-highcpu-96").origin == "shipped"
    assert cat.instance("gcp:c3-highcpu-8").origin == "shipped"
    # new families become usable; the report's lookups see SkyPilot's figures
    assert cat.cpu_instance("gcp:c4-highcpu", 8)[0].spot == 0.1421  # in us-central1, gcp's default region
    assert cat.cpu_instance("gcp:c4-highcpu", 8, "asia-east1")[0].spot == 0.1201
    p, note = cat.cpu_instance("gcp:n2-highcpu", 6)
    assert p.instance_type == "n2-highcpu-8" and p.origin == "skypilot" and "next larger" in note
    assert cat.gpu_instance("gcp", "H100").spot == 3.35377
    assert cat.gpu_instance("aws", "L4").origin == "skypilot"
    f = tmp_path / "mine.csv"
    f.write_text(f"{','.join(pricing.COLUMNS)}\n"
                 "gcp,n2-highcpu-8,,8,8,,0,us-central1,0.20,0.05,my contract,2026-11-01\n")
    mine = pricing.Catalog.load(f)
    n2 = mine.instance("gcp:n2-highcpu-8")
    assert (n2.spot, n2.source, n2.origin) == (0.05, "my contract", str(f))
    assert mine.instance("gcp:n2-highcpu-8", "europe-west4").origin == "skypilot"


def test_a_missing_or_broken_catalog_does_not_break_loading(tmp_path, monkeypatch):
    monkeypatch.setenv("SKY_RUNTIME_DIR", str(tmp_path))
    cat = pricing.Catalog.load()
    assert cat.sky_sources == [] and cat.sky_missing == ["gcp", "aws"]
    assert cat.sky_sentence() == "no prices from SkyPilot: gcp, aws catalog(s) missing"
    assert cat.rows == pricing.Catalog.load(sky=False).rows
    write_catalog(skycatalog.catalog_root(), "gcp", GCP_HEADER, GCP_ROWS)
    cat = pricing.Catalog.load()
    assert [s.cloud for s in cat.sky_sources] == ["gcp"] and cat.sky_missing == ["aws"]
    assert cat.sky_sentence() == "prices from SkyPilot's gcp catalog (2026-11-22), aws catalog missing"
    write_catalog(skycatalog.catalog_root(), "aws", "Name,Cost", ["x,1"])  # not SkyPilot's schema
    cat = pricing.Catalog.load()
    aws = cat.sky_sources[1]
    assert aws.rows == [] and "header lacks InstanceType" in aws.rejected[0]
    assert cat.instance("aws:c7i.2xlarge").origin == "shipped"


def test_a_large_catalog_reads_whole_each_zone_folded_into_its_region(tmp_path):
    rows = []
    for i in range(2500):
        for region in ("us-central1", "europe-west4"):
            for zone in "abcdefghij":
                rows.append(f"n2-test-{i},{i % 64 + 2}.0,8.0,,,,{region},{region}-{zone},{0.3 + i / 1e4:.5f},"
                            f"{0.1 + (ord(zone) % 7) / 1e3:.5f}")
    write_catalog(tmp_path, "gcp", GCP_HEADER, rows)
    gcp = skycatalog.read("gcp", tmp_path)  # how fast it reads is a benchmark's question, not a test's
    assert len(gcp.rows) == 5000 and not gcp.rejected


def prices(run_cli, *args):
    return run_cli("prices", *args)


def test_prices_command_lists_sources_and_dates(sky_root, run_cli, monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")
    r = prices(run_cli, "--instance", "a3-highgpu-1g")
    assert r.code == 0, r.err
    first, *rest = r.out.splitlines()
    assert first.startswith("SkyPilot gcp catalog ") and "runtime/.sky/catalogs/v8/gcp/vms.csv (2026-11-22, " in first
    assert "4 rejected" in first and "SkyPilot aws catalog" in first
    table = "\n".join(rest)
    assert "gcp:a3-highgpu-1g" in table and "3.35377" in table and "2026-11-22" in table
    assert "SkyPilot catalog" in table and "1x H100" in table
    r = prices(run_cli, "--provider", "gcp", "--family", "n2-highcpu", "--region", "us-central1", "--format", "csv")
    assert r.code == 0 and "SkyPilot gcp catalog" in r.err  # the first line goes to stderr: CSV stays CSV
    got = {row["instance_type"]: row for row in csv.DictReader(io.StringIO(r.out))}
    assert got["n2-highcpu-8"]["spot_usd_per_hour"] == "0.0811" and got["n2-highcpu-8"]["zone"] == "us-central1-c"
    assert got["n2-highcpu-8"]["as_of"] == "2026-11-22" and got["n2-highcpu-8"]["origin"] == "skypilot"
    assert got["n2-highcpu-96"]["origin"] == "shipped" and got["n2-highcpu-96"]["as_of"] == "2024-12"
    assert set(r["region"] for r in got.values()) == {"us-central1"}
    # one row per instance, in the region a report prices it in, unless asked for more
    r = prices(run_cli, "--instance", "gcp:n2-highcpu-8", "--format", "csv")
    assert [row["region"] for row in csv.DictReader(io.StringIO(r.out))] == ["us-central1"]
    r = prices(run_cli, "--instance", "gcp:n2-highcpu-8", "--all-regions", "--format", "csv")
    assert sorted(row["region"] for row in csv.DictReader(io.StringIO(r.out))) == ["europe-west4", "us-central1"]
    r = prices(run_cli, "--instance", "n2-highcpu-8", "--region", "europe-west4", "--format", "csv")
    assert [row["spot_usd_per_hour"] for row in csv.DictReader(io.StringIO(r.out))] == ["0.1032"]
    r = prices(run_cli, "--family", "c4-highcpu", "--format", "csv")
    got = {row["instance_type"]: row for row in csv.DictReader(io.StringIO(r.out))}
    assert {row["region"] for row in got.values()} == {"us-central1"}  # not asia-east1, the fixture's other region
    assert got["c4-highcpu-8"]["origin"] == "skypilot" and got["c4-highcpu-8"]["spot_usd_per_hour"] == "0.1421"
    assert got["c4-highcpu-16"]["origin"] == "shipped"  # a shipped size SkyPilot's (fixture) catalog lacks
    r = prices(run_cli, "--gpu", "--format", "json")
    assert r.code == 0 and '"accelerator": ""' not in r.out
    r = prices(run_cli, "--no-skypilot", "--instance", "gcp:n2-highcpu-8", "--format", "csv")
    assert "not read (--no-skypilot)" in r.err
    (row,) = csv.DictReader(io.StringIO(r.out))
    assert row["origin"] == "shipped" and row["spot_usd_per_hour"] == "0.09379"
    r = prices(run_cli, "--rejected", "--format", "csv")
    assert r.code == 0 and "spot 1.5 above on-demand" in r.out and "c7i.large" in r.out
    r = prices(run_cli, "--family", "nope")
    assert r.code == 2 and "no price in the catalog matches --family nope" in r.err


def test_prices_command_says_when_no_catalog_was_found(run_cli, tmp_path, monkeypatch):
    monkeypatch.setenv("SKY_RUNTIME_DIR", str(tmp_path))
    monkeypatch.setenv("COLUMNS", "200")
    r = prices(run_cli, "--provider", "gcp-2017")
    assert r.code == 0, r.err
    first = r.out.splitlines()[0]
    assert first.startswith("no SkyPilot catalog found (looked for ")
    assert f"{tmp_path}/.sky/catalogs/v8/gcp/vms.csv" in first and "sky show-gpus" in first
    assert "gcp-2017:n1-highcpu-8" in r.out and "2017-07" in r.out


def test_prices_help_does_not_import_heavy_modules():
    code = (
        "import sys\n"
        "from cpustudy.cli import main\n"
        "try:\n    main(['prices', '--help'])\nexcept SystemExit:\n    pass\n"
        "heavy = [m for m in ('tensorflow', 'keras', 'pandas', 'plotnine', 'numpy') if m in sys.modules]\n"
        "print('HEAVY=' + ','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "--no-skypilot" in out and "SkyPilot" in out
    assert out.strip().splitlines()[-1] == "HEAVY="
    # listing the prices is as light
    code = ("import sys\nfrom cpustudy.cli import main\nmain(['prices', '--no-skypilot', '--format', 'csv'])\n"
            "print('HEAVY=' + ','.join(m for m in ('tensorflow', 'pandas') if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "HEAVY="
