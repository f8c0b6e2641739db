<#
.SYNOPSIS
  Resolve a name with the Windows DNS client (Resolve-DnsName) and print one JSON line.
.DESCRIPTION
  Uses the pod's DNS suffix search list the way Windows applications do, which is where Windows
  differs from nslookup.exe (000_4130a90def37a825.txt, DNS). Exit code 0 when addresses came back.
.EXAMPLE
  powershell.exe -NoProfile -File C:\wincon\resolve.ps1 -Name kubernetes.default
#>
param(
    [Parameter(Mandatory = $true)][string]$Name,
    [ValidateSet('A', 'AAAA', 'A_AAAA')][string]$Type = 'A_AAAA',
    [string]$Server = ''
)
$result = [ordered]@{ tool = 'Resolve-DnsName'; name = $Name; type = $Type; server = $Server; ok = $false; addresses = @(); error = '' }
try {
    $query = @{ Name = $Name; Type = $Type; DnsOnly = $true; ErrorAction = 'Stop' }
    if ($Server) { $query.Server = $Server }
    $answers = Resolve-DnsName @query
    $result.addresses = @($answers | Where-Object { $_.IPAddress } | ForEach-Object { [string]$_.IPAddress })
    $result.ok = $result.addresses.Count -gt 0
    if (-not $result.ok) { $result.error = 'no address records in the answer' }
} catch {
    $result.error = $_.Exception.GetBaseException().Message
}
$result | ConvertTo-Json -Compress
if ($result.ok) { exit 0 } else { exit 1 }
